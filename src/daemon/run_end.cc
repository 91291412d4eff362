// SPDX-License-Identifier: Apache-2.0
#include "daemon/run_end.h"

#include <cmath>
#include <cstring>
#include <fmt/format.h>

#include "base/time.h"

namespace gpuq::daemon {
namespace {

std::string exit_text(const runner::ExitRecord& r) {
  if (r.signal) return fmt::format("killed by signal {} ({})", *r.signal, strsignal(*r.signal));
  if (r.exit_code) return fmt::format("exit code {}", *r.exit_code);
  return "no exit status";
}

nlohmann::json optional_int(const std::optional<int>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string log_note_of(const runner::ExitRecord& r) {
  std::string note;
  if (r.disk_full) note = "the disk was full during the run: output.log may lack output";
  if (r.log_dropped_bytes > 0) {
    if (!note.empty()) note += "; ";
    note += fmt::format("output.log reached its cap ([runs] max_log); {} bytes or more were dropped",
                        r.log_dropped_bytes);
  }
  return note;
}

std::string step_label(const StepRun& step, const std::vector<std::string>& names) {
  size_t i = static_cast<size_t>(step.index);
  if (i < names.size() && !names[i].empty()) return fmt::format("step {} ({})", step.index, names[i]);
  return fmt::format("step {}", step.index);
}

}  // namespace

namespace {
bool step_ended(StepState state) { return state != StepState::kPending && state != StepState::kRunning; }
}  // namespace

std::vector<StepChange> step_changes(const std::vector<StepRun>& recorded, const std::vector<StepRun>& seen) {
  std::vector<StepChange> changes;
  for (const StepRun& step : seen) {
    const StepRun* before = nullptr;
    for (const StepRun& r : recorded) {
      if (r.index == step.index) before = &r;
    }
    StepChange change{step, false, false};
    change.started = step.started_at_ms > 0 && (!before || before->started_at_ms == 0);
    change.finished = step_ended(step.state) && (!before || !step_ended(before->state));
    if (change.started || change.finished) changes.push_back(std::move(change));
  }
  return changes;
}

std::vector<StepRun> steps_of_lost_run(std::vector<StepRun> steps, int64_t ended_ms) {
  for (StepRun& step : steps) {
    if (step.state != StepState::kRunning) continue;
    step.state = StepState::kStopped;
    step.ended_at_ms = ended_ms;
  }
  return steps;
}

const StepRun* step_that_ended_run(const std::vector<StepRun>& steps) {
  for (const StepRun& step : steps) {
    if (step.state == StepState::kFailed || step.state == StepState::kTimedOut ||
        step.state == StepState::kStopped) {
      return &step;
    }
  }
  return nullptr;
}

RunEnd judge_run_end(const Run& run, const runner::ExitRecord& record, bool has_done_if,
                     int64_t now_ms, bool while_down, const std::vector<std::string>& step_names) {
  RunEnd end;
  end.steps = record.steps;
  const StepRun* ended_by = step_that_ended_run(record.steps);
  end.exit_code = record.exit_code;
  end.signal = record.signal;
  end.ended_ms = record.ended_at_ms ? record.ended_at_ms : now_ms;
  end.log_note = log_note_of(record);
  if (!record.claim_lapsed.empty()) {
    // The shim stopped it on its own: another node may run the job now, so this one must not
    // run it again (a cancel, never a failure that a retry would repeat).
    end.outcome = RunOutcome::kCancelled;
    end.reason = fmt::format("run {} stopped: {}", run.number, record.claim_lapsed);
  } else if (run.stop_reason == StopReason::kCancel) {
    end.outcome = RunOutcome::kCancelled;
    end.reason = "cancelled by request while running";
  } else if (run.stop_reason == StopReason::kTimeout) {
    end.outcome = RunOutcome::kTimedOut;
    end.reason = fmt::format("run {} timed out", run.number);
  } else if (run.preempt_deadline_ms != 0 && record.exit_code == kYieldExitCode) {
    // It was asked to yield (even if the request was withdrawn since) and did.
    end.outcome = RunOutcome::kPreempted;
    end.how = "yielded";
  } else if (run.stop_reason == StopReason::kPreempt && record.stop_requested) {
    end.outcome = RunOutcome::kPreempted;
    end.how = "stopped";
  } else if (ended_by && ended_by->state == StepState::kTimedOut) {
    end.outcome = RunOutcome::kTimedOut;
    end.reason = fmt::format("run {}: {} timed out", run.number, step_label(*ended_by, step_names));
  } else if (!record.error.empty()) {
    end.reason = ended_by ? fmt::format("run {}: {} could not start: {}", run.number,
                                        step_label(*ended_by, step_names), record.error)
                          : "could not start: " + record.error;
  } else if (ended_by) {
    end.reason = fmt::format("run {}: {} failed: {}", run.number, step_label(*ended_by, step_names),
                             exit_text(record));
  } else if (record.exit_code == 0) {
    end.outcome = RunOutcome::kSucceeded;
    end.needs_done_if = has_done_if;
  } else {
    end.reason = fmt::format("run {}: {}", run.number, exit_text(record));
  }
  end.data = {{"exit_code", optional_int(record.exit_code)}, {"signal", optional_int(record.signal)}};
  if (record.leftovers_killed > 0) end.data["leftovers_killed"] = record.leftovers_killed;
  if (while_down) end.data["while_daemon_down"] = true;
  if (!record.claim_lapsed.empty()) end.data["claim_lapsed"] = record.claim_lapsed;
  if (!end.log_note.empty()) end.data["log_note"] = end.log_note;
  if (ended_by) end.data["step"] = ended_by->index;
  return end;
}

RunEnd verify_done_if(RunEnd end, const Run& run, bool done) {
  end.needs_done_if = false;
  end.verified = done;
  if (run.stop_reason == StopReason::kCancel) {
    end.outcome = RunOutcome::kCancelled;
    end.reason = "cancelled by request";
  } else if (!done) {
    end.outcome = RunOutcome::kFailed;
    end.reason = fmt::format("run {} exited 0 but DONE_IF does not hold", run.number);
  }
  return end;
}

int64_t retry_delay_ms(int64_t job_delay_ms, const RetryPolicy& policy, int failed_runs) {
  double delay = static_cast<double>(job_delay_ms >= 0 ? job_delay_ms : policy.delay_ms);
  for (int i = 1; i < failed_runs && delay < static_cast<double>(policy.max_delay_ms); ++i) {
    delay *= policy.backoff;
  }
  if (!(delay < static_cast<double>(policy.max_delay_ms))) return policy.max_delay_ms;
  return static_cast<int64_t>(delay);
}

AfterRun decide_after_run(RunOutcome outcome, int failed_runs, int retries, int64_t job_delay_ms,
                          const RetryPolicy& policy, bool active, int64_t now_ms) {
  AfterRun after;
  bool counts = outcome == RunOutcome::kFailed || outcome == RunOutcome::kTimedOut;
  after.failed_runs = failed_runs + (counts ? 1 : 0);
  switch (outcome) {
    case RunOutcome::kSucceeded: after.to = JobState::kSucceeded; break;
    case RunOutcome::kCancelled: after.to = JobState::kCancelled; break;
    default: after.to = JobState::kFailed; break;
  }
  if (!active) return after;
  if (outcome == RunOutcome::kPreempted) {
    after.to = JobState::kPending;
    after.preempted = true;
  } else if (counts && after.failed_runs <= retries) {
    after.to = JobState::kPending;
    after.retry = true;
    after.retry_at_ms =
        saturating_add(now_ms, retry_delay_ms(job_delay_ms, policy, after.failed_runs));
  }
  return after;
}

LostRun decide_lost_run(const Run& run, int earlier_lost_runs) {
  LostRun lost;
  lost.requeue = earlier_lost_runs == 0 && run.stop_reason == StopReason::kNone;
  if (lost.requeue) {
    lost.to = JobState::kPending;
    lost.reason = fmt::format("run {} was lost (its shim vanished, e.g. a power cut); requeued once",
                              run.number);
    return lost;
  }
  lost.to = run.stop_reason == StopReason::kCancel ? JobState::kCancelled : JobState::kFailed;
  lost.reason = run.stop_reason != StopReason::kNone
                    ? fmt::format("run {} was lost (its shim vanished) while the daemon was "
                                  "stopping it ({}); not requeued",
                                  run.number, to_string(run.stop_reason))
                    : fmt::format("run {} was lost (its shim vanished) after an earlier lost run; "
                                  "not requeued again — inspect it, then resubmit",
                                  run.number);
  return lost;
}

int not_started_before(const std::vector<Run>& runs, int number) {
  int count = 0;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->number >= number) continue;
    if (it->outcome != RunOutcome::kNotStarted) break;
    ++count;
  }
  return count;
}

LostRun decide_unstarted_run(const Run& run, int earlier_not_started, int max_not_started) {
  LostRun unstarted;
  unstarted.not_started_in_a_row = earlier_not_started + 1;
  if (run.stop_reason == StopReason::kCancel) {
    unstarted.to = JobState::kCancelled;
    unstarted.reason = fmt::format("run {} never began and the job was cancelled", run.number);
    return unstarted;
  }
  if (unstarted.not_started_in_a_row < max_not_started) {
    unstarted.requeue = true;
    unstarted.to = JobState::kPending;
    unstarted.reason = fmt::format(
        "run {} never began: the daemon stopped before it let the job run; requeued", run.number);
    return unstarted;
  }
  int first = run.number - earlier_not_started;
  unstarted.to = JobState::kHeld;
  unstarted.why = fmt::format(
      "{} never began, {} in a row ([runs] max_not_started = {}): each time the daemon stopped "
      "after recording the start and before letting the job run",
      first == run.number ? fmt::format("run {}", run.number)
                          : fmt::format("runs {} to {}", first, run.number),
      unstarted.not_started_in_a_row, max_not_started);
  unstarted.fix = fmt::format(
      "find out why the daemon stops as it starts this job (its log: journalctl --user -u gpuq, "
      "or $GPUQ_HOME/daemon.log), then: gpuq release {}",
      run.job_id);
  unstarted.reason = fmt::format("{}; held — {}", unstarted.why, unstarted.fix);
  return unstarted;
}

}  // namespace gpuq::daemon
