// SPDX-License-Identifier: Apache-2.0
// A job's steps across its runs (docs/jobs.md, "Steps"): which run last reached a step, and
// where a step's output lies in its run's output.log. The shim records, for every step it
// begins, output.log's size at that moment (StepRun::log_offset), so a step's output is the
// bytes from its own offset to the next step's offset in the same run, or to the end of the
// log for the step a run began last. Used by the job's JSON (model/json.h) and the API's
// `GET /v1/jobs/{ref}/log?step=N`. Pure functions over the values given; they own nothing,
// and the pointers they return point into those values. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "model/job.h"

namespace gpuq {

// Whether a run reached a step: the shim began it (it ran, was skipped, or is running).
inline bool step_reached(const StepRun& step) { return step.state != StepState::kPending; }

// Step `index` as `run` recorded it, or null when the run did not reach it.
const StepRun* reached_step(const Run& run, int index);

// A step and the run that reached it.
struct StepInRun {
  const Run* run = nullptr;
  const StepRun* step = nullptr;
};

// The newest of the job's runs that reached step `index`; nullopt when none has.
std::optional<StepInRun> newest_run_of_step(const Job& job, int index);

// Where `step`'s output ends in `run`'s output.log: the offset of the next step the run
// reached. Nullopt while there is none: the step is running, or it is the last the run reached
// (its output goes to the end of the log).
std::optional<int64_t> step_log_end(const Run& run, const StepRun& step);

}  // namespace gpuq
