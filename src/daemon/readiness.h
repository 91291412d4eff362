// SPDX-License-Identifier: Apache-2.0
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

using StateLookup = std::function<std::optional<JobState>(int64_t)>;

// `state_of` returns a job's state, or nullopt for a job that does not exist.
DependencyVerdict evaluate_job_dependencies(const ActiveJob& job, const StateLookup& state_of);

// What one scheduling pass does with one job that is not running: the order of the rules is
// the order a person reads a waiting job's reason in (held, then time, then other jobs, then
// the job's own conditions).
struct Readiness {
  enum class Kind {
    kNotWaiting,     // running: nothing to decide
    kHeld,           // held by a person
    kCancelling,     // a cancel waits to be recorded: it never starts again
    kBlocked,        // blocked, and its dependencies still can never be met
    kUnblock,        // blocked, but no longer impossible (a job it needs was retried)
    kNotBefore,      // its not-before time is ahead (until_ms)
    kRetryDelay,     // a retry's delay runs until until_ms
    kStartRetry,     // a start failed for want of the machine; tried again at until_ms
    kDependency,     // waits for another job (dependency says which)
    kBlock,          // a dependency can never be met now: block it
    kCheck,          // its conditions must be checked now (unchecked, or a recheck is due)
    kChecking,       // a check of its conditions is running
    kConditionFalse, // its conditions were false; checked again at until_ms
    kCheckImages,    // its images must be checked now
    kImagesWait,     // its images are being checked or pulled
    kPull,           // an image must be pulled: hand the pull to the scheduler
    kReady,          // may start: hand it to the scheduler
  };
  Readiness(Kind k = Kind::kReady, int64_t until = 0, DependencyVerdict verdict = {})
      : kind(k), until_ms(until), dependency(std::move(verdict)) {}
  Kind kind = Kind::kReady;
  int64_t until_ms = 0;
  DependencyVerdict dependency;
};

Readiness job_readiness(const ActiveJob& job, int64_t now_ms, const StateLookup& state_of);

// Whether a ready job's conditions must be checked again before it starts: the last check said
// they held (DONE_IF false, REQUIRES and files true), but that was `max_age_ms` or more ago —
// the job may have waited long for a GPU, and its work may be done by now.
bool conditions_stale(const ActiveJob& job, int64_t now_ms, int64_t max_age_ms);

}  // namespace gpuq::daemon
