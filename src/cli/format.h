// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the CLI's human output: how jobs, times and GPU lists read in tables and
// messages. Pure functions over the daemon's JSON; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/context.h"
#include "cli/daemon_client.h"

namespace gpuq::cli {

// "job 7 (train-a15)", or "job 7" when the job has no name.
std::string job_label(const Json& job);

// The job's name; "fleet:ID" for a fleet job without one (docs/fleet.md); "-" otherwise.
std::string name_or_dash(const Json& job);

// The latest run of a job, or null when it has none.
const Json* latest_run(const Json& job);

// How long a job has waited (pending, held, blocked), run so far (running) or ran (its latest
// run, once finished); "-" when unknown. `now_ms` is the wall clock.
std::string job_time(const Json& job, int64_t now_ms);

// A run's duration: ended - started, or now - started while it runs; "-" when unknown.
std::string run_duration(const Json& run, int64_t now_ms);
// The same for anything with a start and an end in epoch milliseconds (0 or null: none yet).
std::string span_duration(std::optional<int64_t> started_ms, std::optional<int64_t> ended_ms,
                          bool running, int64_t now_ms);

// GPU memory for people: "900 MiB" below 1 GiB, else "17.6 GiB" (one decimal).
std::string format_mib(int64_t mib);

// A count with thousands separated: "1,204".
std::string format_count(int64_t n);

// A size for people: "512 B", "3.4 KiB", "2.1 GiB" (one decimal from KiB up, to TiB).
std::string format_bytes(int64_t bytes);

// "1 job" / "2 jobs", the count as format_count writes it.
std::string count_of(int64_t n, std::string_view one, std::string_view many);

// "0,1" from [0,1] or ["gpu0"]; "-" when empty.
std::string gpu_list(const Json& gpus);

// The reason for waiting or failing when the job has one that matters now, else its command.
std::string reason_or_command(const Json& job);

// A number, a string or null as text ("-" for null or absent).
std::string field_text(const Json& object, std::string_view key);

// `text` cut to `max` display columns, ending in "…" when cut.
std::string truncate(const std::string& text, size_t max);

// Prints a daemon's answer as it came (for --json), ending it with a newline; returns 0.
int print_body(Context& ctx, const std::string& body);
// Prints `value` on one line (for --json); returns 0.
int print_json(Context& ctx, const Json& value);
// The element of a --json array for `ref` when it failed: {"ref", "error": {"code",
// "message"}}, the daemon's error object ("code" null when the daemon did not answer one).
Json error_json(const std::string& ref, const CliError& error);

}  // namespace gpuq::cli
