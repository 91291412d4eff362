// SPDX-License-Identifier: Apache-2.0
// Recording a run's end: what follows it (run_end.h: succeeded, failed, retried with its delay,
// preempted and requeued), written with its events inside a commit, and only then applied to
// memory. The ends of one turn share one commit; an end the store refuses stays in memory, the
// run as the store has it (running), and is tried again until it is recorded.
#include <fmt/format.h>

#include "base/time.h"
#include "daemon/run_lifecycle.h"

namespace gpuq::daemon {

void RunLifecycle::finish_ended_runs(const std::vector<int64_t>& job_ids) {
  if (job_ids.size() < 2) {
    for (int64_t job_id : job_ids) finish_run(job_id);
    return;
  }
  std::vector<Finish> finishes;
  for (int64_t job_id : job_ids) finishes.push_back(prepare_finish(job_id));
  // One transaction, one fsync: every end on record (its events in this order) before any
  // listener hears of one.
  auto committed = host_.commit([&]() -> Status {
    for (auto& f : finishes) {
      if (auto st = write_finish(f); !st) return st;
    }
    return ok();
  });
  if (!committed) {
    // Each alone, so that one end's failing write cannot hold the others back; a failing
    // store keeps each for later (finish_run's retry).
    for (int64_t job_id : job_ids) finish_run(job_id);
    return;
  }
  for (auto& f : finishes) after_finish(f);
}

void RunLifecycle::finish_run(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || !it->second.ended) return;
  if (ended_batch_) {
    ended_batch_->push_back(job_id);
    return;
  }
  Finish finish = prepare_finish(job_id);
  if (!host_.commit([&] { return write_finish(finish); })) {
    // The run stays as the store has it — running — and its end is recorded once it can be.
    host_.retry_later(fmt::format("finish:{}", job_id), [this, job_id] { finish_run(job_id); });
    return;
  }
  after_finish(finish);
}

RunLifecycle::Finish RunLifecycle::prepare_finish(int64_t job_id) {
  const LiveRun& live = running_.at(job_id);
  const Run& run = live.run;
  Finish f;
  f.job_id = job_id;
  f.end = *live.ended;
  RunEnd& end = f.end;
  if (run.stop_reason == StopReason::kCancel && end.outcome != RunOutcome::kCancelled) {
    // Cancelled after the run ended but before its end was recorded: the cancel wins, as it
    // does while the run lives, so the job is not retried.
    end.outcome = RunOutcome::kCancelled;
    end.reason = "cancelled by request";
  }
  const ActiveJob* active = host_.active_job(job_id);
  f.tracked = active != nullptr;
  f.now_ms = world_.now_ms();
  RetryPolicy policy{config_.retry_delay_ms, config_.retry_backoff, config_.retry_max_delay_ms};
  f.after = decide_after_run(end.outcome, f.tracked ? active->failed_runs : 0,
                             f.tracked ? active->retries : 0,
                             f.tracked ? active->retry_delay_ms : -1, policy, f.tracked, f.now_ms);
  end.data["outcome"] = to_string(end.outcome);
  if (end.verified) end.data["verified"] = *end.verified;
  if (live.peak_mib) {
    f.peak = *live.peak_mib;
    end.data["peak_gpu_mem_mib"] = *live.peak_mib;
  }
  return f;
}

Status RunLifecycle::write_finish(Finish& f) {
  int64_t job_id = f.job_id;
  const LiveRun& live = running_.at(job_id);
  const Run& run = live.run;
  RunEnd& end = f.end;
  const AfterRun& after = f.after;
  const ActiveJob* active = host_.active_job(job_id);
  // Each step's start and end before the run's: events in the order things happened.
  if (!end.steps.empty()) {
    if (auto st = write_steps(live, end.steps); !st) return st;
  }
  auto st = store_.finish_run(run.id, end.ended_ms, end.exit_code, end.signal, end.outcome);
  if (!st) return st;
  if (!live.stop_recorded) {
    if (st = store_.set_stop_reason(run.id, run.stop_reason); !st) return st;
  }
  if (f.peak) {
    if (st = store_.set_peak_gpu_mem(run.id, *f.peak); !st) return st;
  }
  if (end.verified) {
    if (st = store_.set_run_verified(run.id, *end.verified); !st) return st;
  }
  if (!end.log_note.empty()) {
    if (st = store_.set_log_note(run.id, end.log_note); !st) return st;
  }
  if (after.preempted) {
    std::string reason = run.preempted_by != 0
                             ? fmt::format("preempted by job {} (run {} {}); back in the queue in its place",
                                           run.preempted_by, run.number, end.how)
                             : fmt::format("run {} yielded; back in the queue in its place", run.number);
    if (st = host_.set_state(job_id, JobState::kRunning, JobState::kPending, reason); !st) return st;
    nlohmann::json data = end.data;
    data["by"] = run.preempted_by != 0 ? nlohmann::json(run.preempted_by) : nlohmann::json(nullptr);
    data["mode"] = to_string(active->preempt);
    data["how"] = end.how;
    return host_.add_event("job.preempted", job_id, run.number, data);
  }
  if (after.retry) {
    std::string reason = fmt::format("{}; retry {}/{}", end.reason, after.failed_runs, active->retries);
    if (st = host_.set_state(job_id, JobState::kRunning, JobState::kPending, reason); !st) return st;
    if (st = store_.set_retry_at(job_id, after.retry_at_ms); !st) return st;
    st = host_.add_event(end.outcome == RunOutcome::kTimedOut ? "job.timed_out" : "job.failed_run", job_id,
                         run.number, end.data);
    if (!st) return st;
    return host_.add_event("job.retrying", job_id, run.number,
                           {{"attempt", after.failed_runs}, {"retries", active->retries},
                            {"at", format_rfc3339(after.retry_at_ms)}, {"delay_ms", after.retry_at_ms - f.now_ms}});
  }
  if (st = host_.set_state(job_id, JobState::kRunning, after.to, end.reason); !st) return st;
  return host_.add_event(fmt::format("job.{}", to_string(after.to)), job_id, run.number, end.data);
}

void RunLifecycle::after_finish(const Finish& f) {
  int64_t job_id = f.job_id;
  auto it = running_.find(job_id);
  host_.metrics().run_finished(to_string(f.end.outcome));
  if (f.end.outcome == RunOutcome::kSucceeded && f.peak) {
    if (auto job = host_.load_job(job_id, false); job && !job->spec.name.empty()) {
      host_.note_footprint(job->spec.name);
    }
  }
  running_.erase(it);
  ActiveJob* job = host_.active_job(job_id);
  if (f.after.to == JobState::kPending && f.tracked && job) {
    job->state = JobState::kPending;
    job->failed_runs = f.after.failed_runs;
    if (f.after.retry) job->retry_at_ms = f.after.retry_at_ms;
    job->conditions = job->has_conditions ? ConditionState::kUnknown : ConditionState::kNone;
    // Its images are checked again before the next run (one may have been removed meanwhile).
    if (job->images != ImageState::kNone) job->images = ImageState::kUnchecked;
  } else {
    host_.note_finished(job_id, f.after.to);
  }
  host_.request_pass();
}

}  // namespace gpuq::daemon
