// SPDX-License-Identifier: Apache-2.0
#include "daemon/readiness.h"

#include <fmt/format.h>

namespace gpuq::daemon {
namespace {

bool finished_ok(JobState s) { return s == JobState::kSucceeded || s == JobState::kSkipped; }
bool finished_not_ok(JobState s) { return s == JobState::kFailed || s == JobState::kCancelled; }

}  // namespace

std::string DependencyVerdict::text() const {
  switch (kind) {
    case Kind::kSatisfied: return "";
    case Kind::kWaiting:
      return fmt::format("waiting for job {} ({}{})", job, to_string(job_state),
                         dep_kind == Dependency::Kind::kAfterNotOk ? "; runs only if it fails" : "");
    case Kind::kImpossible:
      if (job_state == JobState::kBlocked) return fmt::format("job {} is blocked", job);
      if (dep_kind == Dependency::Kind::kAfterNotOk) {
        return fmt::format("job {} {}, and this job runs only if it fails (afternotok)", job,
                           to_string(job_state));
      }
      return fmt::format("job {} {} (afterok); `gpuq retry {}` releases this job", job,
                         to_string(job_state), job);
  }
  return "";
}

DependencyVerdict evaluate_job_dependencies(const ActiveJob& job, const StateLookup& state_of) {
  DependencyVerdict waiting;
  bool any_waiting = false;
  for (const Dependency& dep : job.rare->deps) {
    if (dep.kind == Dependency::Kind::kFile || dep.kind == Dependency::Kind::kRequires) continue;
    auto state = state_of(dep.job_id);
    DependencyVerdict v;
    v.job = dep.job_id;
    v.dep_kind = dep.kind;
    v.job_state = state.value_or(JobState::kCancelled);
    if (!state) {
      v.kind = DependencyVerdict::Kind::kImpossible;
      return v;
    }
    JobState s = *state;
    bool terminal = is_terminal(s);
    // A blocked job never runs by itself: whatever waits on it is blocked too (the cascade).
    if (s == JobState::kBlocked) {
      v.kind = DependencyVerdict::Kind::kImpossible;
      return v;
    }
    bool satisfied = false, impossible = false;
    switch (dep.kind) {
      case Dependency::Kind::kAfterOk:
        satisfied = finished_ok(s);
        impossible = finished_not_ok(s);
        break;
      case Dependency::Kind::kAfterAny: satisfied = terminal; break;
      case Dependency::Kind::kAfterNotOk:
        satisfied = finished_not_ok(s);
        impossible = finished_ok(s);
        break;
      default: break;
    }
    if (impossible) {
      v.kind = DependencyVerdict::Kind::kImpossible;
      return v;
    }
    if (!satisfied && !any_waiting) {
      any_waiting = true;
      waiting = v;
      waiting.kind = DependencyVerdict::Kind::kWaiting;
    }
  }
  return any_waiting ? waiting : DependencyVerdict{};
}

Readiness job_readiness(const ActiveJob& job, int64_t now_ms, const StateLookup& state_of) {
  using K = Readiness::Kind;
  Readiness r;
  if (job.cancel_requested) return {K::kCancelling};
  if (job.state == JobState::kBlocked) {
    r.dependency = evaluate_job_dependencies(job, state_of);
    r.kind = r.dependency.kind == DependencyVerdict::Kind::kImpossible ? K::kBlocked : K::kUnblock;
    return r;
  }
  if (job.state == JobState::kHeld) return {K::kHeld};
  if (job.state != JobState::kPending) return {K::kNotWaiting};
  // The latest of the times the job waits for decides, and names the wait.
  r.kind = K::kReady;
  if (job.not_before_ms > now_ms) r = {K::kNotBefore, job.not_before_ms};
  if (job.retry_at_ms > now_ms && job.retry_at_ms > r.until_ms) r = {K::kRetryDelay, job.retry_at_ms};
  if (int64_t at = job.rare->start_retry_at_ms; at > now_ms && at > r.until_ms) {
    r = {K::kStartRetry, at};
  }
  if (r.kind != K::kReady) return r;
  r.dependency = evaluate_job_dependencies(job, state_of);
  if (r.dependency.kind == DependencyVerdict::Kind::kImpossible) return {K::kBlock, 0, r.dependency};
  if (r.dependency.kind == DependencyVerdict::Kind::kWaiting) return {K::kDependency, 0, r.dependency};
  if (job.has_conditions) {
    switch (job.conditions) {
      case ConditionState::kNone:
      case ConditionState::kTrue: break;
      case ConditionState::kUnknown: return {K::kCheck};
      case ConditionState::kChecking: return {K::kChecking};
      case ConditionState::kFalse:
        if (job.rare->next_check_ms <= now_ms) return {K::kCheck};
        return {K::kConditionFalse, job.rare->next_check_ms};
    }
  }
  // Its images last: nothing is pulled for a job whose conditions do not hold.
  switch (job.images) {
    case ImageState::kNone:
    case ImageState::kReady: return r;
    case ImageState::kUnchecked: return {K::kCheckImages};
    case ImageState::kChecking:
    case ImageState::kPulling: return {K::kImagesWait};
    case ImageState::kToPull: return {K::kPull};
  }
  return r;
}

bool conditions_stale(const ActiveJob& job, int64_t now_ms, int64_t max_age_ms) {
  return job.has_conditions && job.conditions == ConditionState::kTrue &&
         now_ms - job.rare->conditions_checked_ms >= max_age_ms;
}

}  // namespace gpuq::daemon
