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

DependencyVerdict evaluate_job_dependencies(
    const ActiveJob& job, const std::function<std::optional<JobState>(int64_t)>& state_of) {
  DependencyVerdict waiting;
  bool any_waiting = false;
  for (const Dependency& dep : job.deps) {
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

}  // namespace gpuq::daemon
