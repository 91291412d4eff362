// SPDX-License-Identifier: Apache-2.0
// The steps of a job with several (docs/jobs.md, "Steps"): what one step is as a run's shim
// runs it, and what one step of one run did. A run's shim runs its steps in order, from the
// first one an earlier run did not finish; it records each step's start and end in the run
// directory (steps.json, and exit.json at the end), the daemon stores them with the run.
// Plain values and their JSON shapes; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace gpuq {

// One step of a job as submitted (JobSpec::steps): a script, snapshotted at submit like a job's
// script (its text is in the spec, its copy in the job directory), or a command.
struct JobStep {
  std::string name;                       // for people: the script's file name, or the command
  std::vector<std::string> argv;          // a command; empty when `script_text` is set
  std::string script_name;                // the submitted script's path
  std::string script_text;                // its content
  std::vector<std::string> script_args;   // arguments after the script
  int64_t timeout_ms = 0;                 // the step's own limit; 0: only the job's
  std::string done_if;                    // skips the step when this shell test exits 0
  std::string image;                      // runs in this container image; "": the job's
  bool operator==(const JobStep&) const = default;
};

// The name a step has for people when none was given: the script's file name, or the command.
std::string default_step_name(const JobStep& step);

// What one step runs, as a run's shim gets it (runner::RunSpec::steps).
struct StepSpec {
  std::string name;               // for people: the script's file name, or the command
  std::vector<std::string> argv;  // argv[0] is looked up in the job's PATH
  int64_t timeout_ms = 0;         // the step's own limit; 0: only the job's
  std::string done_if;            // a shell test run before the step: status 0 skips it
};

// kPending: not reached (an earlier step failed, or the run was stopped first). kSkipped: its
// done_if passed. kStopped: a stop (cancel, timeout, preemption, a lapsed fleet claim) reached
// it while it ran. kTimedOut: its own timeout stopped it.
enum class StepState { kPending, kRunning, kSucceeded, kFailed, kSkipped, kStopped, kTimedOut };

std::string_view to_string(StepState state);
Result<StepState> parse_step_state(std::string_view text);
// A state after which the next step may run.
inline bool step_done(StepState state) { return state == StepState::kSucceeded || state == StepState::kSkipped; }

// What one step of one run did.
struct StepRun {
  int index = 0;                   // 0-based, in the job's list
  StepState state = StepState::kPending;
  int64_t started_at_ms = 0;       // 0: not started
  int64_t ended_at_ms = 0;         // 0: not ended
  std::optional<int> exit_code;
  std::optional<int> signal;
  int64_t log_offset = 0;          // output.log's size when the step began
};

nlohmann::json step_spec_to_json(const StepSpec& step);
Result<StepSpec> step_spec_from_json(const nlohmann::json& j);
nlohmann::json step_run_to_json(const StepRun& step);
Result<StepRun> step_run_from_json(const nlohmann::json& j);

// The step a new run starts at, after a run that recorded `previous` (its steps from the one
// it started at): the first that is not done; the count when every step is done.
int resume_step(const std::vector<StepRun>& previous, int first_of_previous, int count);

}  // namespace gpuq
