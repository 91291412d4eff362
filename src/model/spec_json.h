// SPDX-License-Identifier: Apache-2.0
// The one JSON form of a JobSpec: the body of POST /v1/jobs (docs/api.md, "Submit request"),
// each job of a plan sent to POST /v1/plans, and what the store keeps. Parsing is strict: an
// unknown field or a value of the wrong type is an error naming the field (and the job's
// `source`, when known), so nothing a client sends is silently ignored.
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "model/job.h"

namespace gpuq {

// Accepts the request form (durations as "2h" or *_ms integers, `after`/`after_any`/
// `after_notok`/`requires`/`wait_file` lists, `lane` or `lanes`, `not_before` as RFC 3339 or
// epoch ms) and the stored form (`deps` objects). `preempt` is "yield", "restart" or "never"
// (absent: never, as in specs stored before preemption existed); `restart_within` (or
// `restart_within_ms`) is refused unless `preempt` is "restart". Checks types and ranges only;
// whether a dependency or lane exists is for the daemon to decide.
// Every number is range-checked against model/limits.h (durations at most a year, times before
// 2100, counts and priorities in their ranges), strings that reach the OS may hold no NUL
// byte, and env names must be valid (check_env_var).
// kStore: a spec the store kept, read back. Types are checked as strictly, but numbers are not
// held to today's upper limits: a job accepted under earlier limits must stay readable.
enum class SpecOrigin { kRequest, kStore };
Result<JobSpec> spec_from_json(const nlohmann::json& body, SpecOrigin origin = SpecOrigin::kRequest);

// An integer JSON number as int64; nullopt for anything else, including unsigned numbers above
// INT64_MAX (which get<int64_t>() would silently wrap to negative).
std::optional<int64_t> json_int64(const nlohmann::json& value);

// A priority as JSON: "high", "normal", "low" or an integer in the limits' range; the error
// names the field 'priority'.
Result<int> priority_from_json(const nlohmann::json& value);

// One variable of a run's environment: a name that is not empty and holds no '=' or NUL (the
// environment block could not represent it faithfully), and a value without NUL.
Status check_env_var(std::string_view name, std::string_view value);

// The stored form; spec_from_json(spec_to_json(s)) == s. Default values are left out
// (`preempt` only when not never, `restart_within_ms` only when set).
nlohmann::json spec_to_json(const JobSpec& spec);
// One entry of a submit request's "steps" on its own (a plan checks each where it was written);
// errors name the field but not the step, as in "field 'image': ...".
Result<JobStep> step_from_json(const nlohmann::json& body);
// One step's stored form: {"name", "argv" | "script": {name, text, args}, "timeout_ms"?,
// "done_if"?, "image"?}.
nlohmann::json job_step_to_json(const JobStep& step);

}  // namespace gpuq
