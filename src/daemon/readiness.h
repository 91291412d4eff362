// Whether a job's dependencies on other jobs allow it to start, may still allow it later, or
// never will (so the job is blocked) — and why, in words a person can act on. Pure functions
// of the job and a lookup of other jobs' states; no store, no clock. Thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "daemon/active_job.h"

namespace gpuq::daemon {

struct DependencyVerdict {
  enum class Kind { kSatisfied, kWaiting, kImpossible };
  Kind kind = Kind::kSatisfied;
  int64_t job = 0;          // the dependency that decides the verdict
  JobState job_state = JobState::kPending;
  Dependency::Kind dep_kind = Dependency::Kind::kAfterOk;
  std::string text() const; // "waiting for job 12 (running)", "job 12 failed (afterok)"
};

// `state_of` returns a job's state, or nullopt for a job that does not exist.
DependencyVerdict evaluate_job_dependencies(
    const ActiveJob& job, const std::function<std::optional<JobState>(int64_t)>& state_of);

}  // namespace gpuq::daemon
