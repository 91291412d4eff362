// SPDX-License-Identifier: Apache-2.0
#include "model/job_steps.h"

namespace gpuq {

const StepRun* reached_step(const Run& run, int index) {
  for (const StepRun& step : run.steps) {
    if (step.index == index && step_reached(step)) return &step;
  }
  return nullptr;
}

std::optional<StepInRun> newest_run_of_step(const Job& job, int index) {
  // Runs are in the order they began; the newest that reached the step wins.
  for (auto run = job.runs.rbegin(); run != job.runs.rend(); ++run) {
    if (const StepRun* step = reached_step(*run, index)) return StepInRun{&*run, step};
  }
  return std::nullopt;
}

std::optional<int64_t> step_log_end(const Run& run, const StepRun& step) {
  const StepRun* next = nullptr;
  for (const StepRun& other : run.steps) {
    if (other.index <= step.index || !step_reached(other)) continue;
    if (!next || other.index < next->index) next = &other;
  }
  if (!next) return std::nullopt;
  return next->log_offset;
}

}  // namespace gpuq
