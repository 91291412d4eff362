// SPDX-License-Identifier: Apache-2.0
#include "model/job.h"
#include "model/dependency_kind.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

#include "model/limits.h"

namespace gpuq {

std::string_view to_string(JobState state) {
  switch (state) {
    case JobState::kPending: return "pending";
    case JobState::kHeld: return "held";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
    case JobState::kBlocked: return "blocked";
    case JobState::kSkipped: return "skipped";
  }
  return "pending";
}

std::string_view to_string(RunOutcome outcome) {
  switch (outcome) {
    case RunOutcome::kRunning: return "running";
    case RunOutcome::kSucceeded: return "succeeded";
    case RunOutcome::kFailed: return "failed";
    case RunOutcome::kTimedOut: return "timed-out";
    case RunOutcome::kCancelled: return "cancelled";
    case RunOutcome::kPreempted: return "preempted";
    case RunOutcome::kLost: return "lost";
    case RunOutcome::kNotStarted: return "not-started";
  }
  return "running";
}

std::string_view to_string(ResourceState state) {
  return state == ResourceState::kFree ? "free" : "busy";
}

std::string_view to_string(PreemptMode mode) {
  switch (mode) {
    case PreemptMode::kYield: return "yield";
    case PreemptMode::kRestart: return "restart";
    case PreemptMode::kNever: break;
  }
  return "never";
}

Result<PreemptMode> parse_preempt_mode(std::string_view text) {
  for (auto m : {PreemptMode::kYield, PreemptMode::kRestart, PreemptMode::kNever}) {
    if (to_string(m) == text) return m;
  }
  return fail(Code::kInvalidArgument,
              fmt::format("bad preempt mode '{}': use yield (the job saves its state and exits "
                          "75), restart (killed and rerun) or never",
                          text));
}

Result<JobState> parse_job_state(std::string_view text) {
  for (auto s : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kSucceeded,
                 JobState::kFailed, JobState::kCancelled, JobState::kBlocked, JobState::kSkipped}) {
    if (to_string(s) == text) return s;
  }
  return fail(Code::kCorruption, fmt::format("unknown job state '{}'", text));
}

Result<RunOutcome> parse_run_outcome(std::string_view text) {
  for (auto o : {RunOutcome::kRunning, RunOutcome::kSucceeded, RunOutcome::kFailed,
                 RunOutcome::kTimedOut, RunOutcome::kCancelled, RunOutcome::kPreempted,
                 RunOutcome::kLost, RunOutcome::kNotStarted}) {
    if (to_string(o) == text) return o;
  }
  return fail(Code::kCorruption, fmt::format("unknown run outcome '{}'", text));
}

std::string_view to_string(StopReason reason) {
  switch (reason) {
    case StopReason::kNone: return "";
    case StopReason::kCancel: return "cancel";
    case StopReason::kTimeout: return "timeout";
    case StopReason::kPreempt: return "preempt";
  }
  return "";
}

Result<StopReason> parse_stop_reason(std::string_view text) {
  for (auto r : {StopReason::kNone, StopReason::kCancel, StopReason::kTimeout, StopReason::kPreempt}) {
    if (to_string(r) == text) return r;
  }
  return fail(Code::kCorruption, fmt::format("unknown stop reason '{}'", text));
}

bool is_terminal(JobState state) {
  return state == JobState::kSucceeded || state == JobState::kFailed ||
         state == JobState::kCancelled || state == JobState::kSkipped;
}

bool is_legal_transition(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::kPending:
      // failed without a run: its container image could not be made ready (pulled, found)
      return to == S::kRunning || to == S::kHeld || to == S::kCancelled || to == S::kBlocked ||
             to == S::kSkipped || to == S::kFailed;
    case S::kHeld: return to == S::kPending || to == S::kCancelled;
    case S::kRunning:
      // back to pending after a lost or preempted run, or a retry; held after too many runs in
      // a row that never began (the daemon died each time before letting its shim go)
      return to == S::kSucceeded || to == S::kFailed || to == S::kCancelled || to == S::kPending ||
             to == S::kHeld;
    case S::kBlocked: return to == S::kPending || to == S::kCancelled;
    case S::kFailed:
    case S::kCancelled: return to == S::kPending;  // an explicit retry
    case S::kSucceeded:
    case S::kSkipped: return false;
  }
  return false;
}

std::string_view to_string(Dependency::Kind kind) {
  switch (kind) {
    case Dependency::Kind::kAfterOk: return "afterok";
    case Dependency::Kind::kAfterAny: return "afterany";
    case Dependency::Kind::kAfterNotOk: return "afternotok";
    case Dependency::Kind::kFile: return "file";
    case Dependency::Kind::kRequires: return "requires";
  }
  return "afterok";
}

std::optional<Dependency::Kind> parse_dependency_kind(std::string_view text) {
  for (auto k : {Dependency::Kind::kAfterOk, Dependency::Kind::kAfterAny, Dependency::Kind::kAfterNotOk,
                 Dependency::Kind::kFile, Dependency::Kind::kRequires}) {
    if (to_string(k) == text) return k;
  }
  return std::nullopt;
}

bool same_work(const JobSpec& a, const JobSpec& b) {
  return a.gpus == b.gpus && a.priority == b.priority && a.cwd == b.cwd && a.argv == b.argv &&
         a.script_text == b.script_text && a.script_args == b.script_args && a.steps == b.steps &&
         a.image == b.image && a.pull == b.pull && a.container_user == b.container_user && a.deps == b.deps &&
         a.done_if == b.done_if && a.lanes == b.lanes && a.retries == b.retries &&
         a.retry_delay_ms == b.retry_delay_ms && a.timeout_ms == b.timeout_ms &&
         a.estimate_ms == b.estimate_ms && a.gpu_mem_mib == b.gpu_mem_mib && a.share == b.share &&
         a.reservation == b.reservation && a.inputs == b.inputs && a.outputs == b.outputs && a.resume == b.resume &&
         a.preempt == b.preempt && a.restart_within_ms == b.restart_within_ms &&
         a.requires_warn_ms == b.requires_warn_ms && a.quiet_ms == b.quiet_ms &&
         a.warn_after_ms == b.warn_after_ms;
}

bool uses_image(const JobSpec& spec) {
  if (!spec.image.empty()) return true;
  return std::any_of(spec.steps.begin(), spec.steps.end(),
                     [](const JobStep& step) { return !step.image.empty(); });
}

std::string_view to_string(PullPolicy policy) {
  switch (policy) {
    case PullPolicy::kAlways: return "always";
    case PullPolicy::kNever: return "never";
    case PullPolicy::kMissing: break;
  }
  return "missing";
}

Result<PullPolicy> parse_pull_policy(std::string_view text) {
  for (auto p : {PullPolicy::kMissing, PullPolicy::kAlways, PullPolicy::kNever}) {
    if (to_string(p) == text) return p;
  }
  return fail(Code::kInvalidArgument,
              fmt::format("pull policy '{}' is not one of always, missing, never", text.substr(0, 40)));
}

Result<int> parse_priority(std::string_view text) {
  if (text == "high") return kPriorityHigh;
  if (text == "normal") return kPriorityNormal;
  if (text == "low") return kPriorityLow;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < limits::kMinPriority ||
      value > limits::kMaxPriority) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad priority '{}': use high, normal, low or an integer {}..{} "
                            "(lower runs first)",
                            text, limits::kMinPriority, limits::kMaxPriority));
  }
  return value;
}

}  // namespace gpuq
