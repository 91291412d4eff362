// SPDX-License-Identifier: Apache-2.0
// Settling ended runs: learning of a shim's exit, judging the run's end from its exit record
// (run_end.h; DONE_IF verified off-thread) and handing its GPUs to the cleanup; a run whose shim
// vanished without a record is lost (its session swept), one whose shim was never let go did not
// start. The ends of one turn are recorded together (run_finish.cc).
#include <fmt/format.h>

#include <cstdio>

#include "daemon/run_lifecycle.h"
#include "runner/container_run_spec.h"

namespace gpuq::daemon {

void RunLifecycle::on_shim_exit(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || stopping_) return;
  LiveRun& live = it->second;
  live.timeout.reset();
  live.yield_deadline.reset();
  // The exits seen in this turn of the loop are settled together, once the others queued with
  // this one have been seen: their ends go on record in one commit (finish_ended_runs).
  exited_.push_back(job_id);
  if (exited_.size() == 1) world_.post([this] { settle_exited(); });
}

void RunLifecycle::settle_exited() {
  std::vector<int64_t> exited;
  exited.swap(exited_);
  if (stopping_) return;
  std::vector<int64_t> ended;
  ended_batch_ = &ended;  // finish_run() collects instead of committing
  for (int64_t job_id : exited) settle_run(job_id, false);
  ended_batch_ = nullptr;
  finish_ended_runs(ended);
  host_.request_pass();
}

void RunLifecycle::settle_run(int64_t job_id, bool while_down) {
  auto it = running_.find(job_id);
  if (it == running_.end() || it->second.ended || it->second.settling) return;
  LiveRun& live = it->second;
  const Run& run = live.run;
  auto again = [this, job_id, while_down] { settle_run(job_id, while_down); };
  auto record = world_.read_exit_record(run.run_dir);
  if (!record && record.error().code != Code::kNotFound) {
    // Unreadable now (out of fds, an I/O error): that says nothing about how the run ended,
    // and a run is never called lost for it.
    std::fprintf(stderr, "gpuq daemon: reading the exit record of job %lld: %s; trying again\n",
                 static_cast<long long>(job_id), record.error().message.c_str());
    host_.retry_later(fmt::format("settle:{}", job_id), again);
    return;
  }
  auto job = host_.load_job(job_id, false);
  if (!job) {
    host_.retry_later(fmt::format("settle:{}", job_id), again);
    return;
  }
  if (live.step_names.empty()) live.step_names = step_names_of(job->spec);
  live.steps_watch.reset();  // the exit record has the last word on the steps
  if (!live.cleanup_begun) {
    live.cleanup_begun = true;
    begin_cleanup(run.id,
                  {run.job_id, run.number, run.run_id, std::move(live.slots), std::move(live.lanes),
                   run.preempted_by, std::nullopt, runner::runs_in_containers(job->spec),
                   cgroup_user_of(job->spec.user)},
                  run.shim_start_ticks);
    live.slots.clear();
    live.lanes.clear();
  }
  live.shim.reset();
  if (!record) return settle_lost_run(job_id);
  if (!record->released) {
    // Recorded, then the daemon died before the go: the job never ran.
    RunEnd unstarted;
    unstarted.outcome = RunOutcome::kNotStarted;
    unstarted.ended_ms = record->ended_at_ms > 0 ? record->ended_at_ms : world_.now_ms();
    live.ended = unstarted;
    return settle_lost_run(job_id, false);
  }
  RunEnd end = judge_run_end(run, *record, !job->spec.done_if.empty(), world_.now_ms(), while_down,
                             live.step_names);
  if (!end.needs_done_if) {
    live.ended = std::move(end);
    return finish_run(job_id);
  }
  // Exit 0 counts only if DONE_IF now holds: check it off-thread, then finish.
  ConditionRequest request;
  request.job_id = job_id;
  request.cwd = job->spec.cwd;
  request.env = job->spec.env;
  request.done_if = job->spec.done_if;
  request.timeout = Millis(config_.requires_timeout_ms);
  live.settling = true;
  world_.check_conditions(std::move(request), [this, job_id, end](ConditionResult result) {
    auto settled = running_.find(job_id);
    if (settled == running_.end() || stopping_) return;
    settled->second.settling = false;
    settled->second.ended = verify_done_if(end, settled->second.run, result.done);
    finish_run(job_id);
    host_.request_pass();
  });
}

void RunLifecycle::settle_lost_run(int64_t job_id, bool released) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  LiveRun& live = it->second;
  const Run& run = live.run;
  auto again = [this, job_id, released] { settle_lost_run(job_id, released); };
  auto job = host_.load_job(job_id, !released);  // a run that never began counts those before it
  if (!job) {
    host_.retry_later(fmt::format("lost:{}", job_id), again);
    return;
  }
  if (live.step_names.empty()) live.step_names = step_names_of(job->spec);
  live.steps_watch.reset();
  if (!live.ended) {
    // What is left of its session goes, off this thread (a run of an earlier boot has
    // nothing left, and its session id may belong to anyone now).
    bool this_boot = run.boot_id.empty() || run.boot_id == places_.boot_id;
    if (this_boot) world_.sweep_session(run.shim_pid, run.shim_start_ticks, [](int) {});
    RunEnd lost;
    lost.outcome = RunOutcome::kLost;
    lost.ended_ms = world_.now_ms();
    live.ended = lost;
  }
  RunOutcome outcome = released ? RunOutcome::kLost : RunOutcome::kNotStarted;
  // The steps as far as the shim told them: a step that was running when it vanished stopped.
  std::vector<StepRun> steps;
  if (released && !live.step_names.empty()) {
    if (auto seen = world_.read_step_record(run.run_dir)) steps = steps_of_lost_run(std::move(*seen), live.ended->ended_ms);
  }
  LostRun decision = released ? decide_lost_run(run, job->lost_count)
                              : decide_unstarted_run(run, not_started_before(job->runs, run.number),
                                                     config_.max_not_started);
  nlohmann::json run_data = {{"requeued", decision.requeue}};
  nlohmann::json end_data = {{"outcome", to_string(outcome)}};
  if (!released) run_data["in_a_row"] = decision.not_started_in_a_row;
  if (decision.to == JobState::kHeld) {
    end_data.update({{"by", "daemon"},
                     {"not_started_in_a_row", decision.not_started_in_a_row},
                     {"max_not_started", config_.max_not_started},
                     {"why", decision.why},
                     {"fix", decision.fix}});
  }
  auto committed = host_.commit([&]() -> Status {
    auto st = store_.finish_run(run.id, live.ended->ended_ms, std::nullopt, std::nullopt, outcome);
    if (!st) return st;
    if (!live.stop_recorded) {
      if (st = store_.set_stop_reason(run.id, run.stop_reason); !st) return st;
    }
    if (released) {
      if (st = store_.set_lost_count(job_id, job->lost_count + 1); !st) return st;
    }
    if (!steps.empty()) {
      if (st = write_steps(live, steps); !st) return st;
    }
    if (st = host_.set_state(job_id, JobState::kRunning, decision.to, decision.reason); !st) return st;
    st = host_.add_event(released ? "job.lost" : "job.not_started", job_id, run.number, run_data);
    if (!st) return st;
    if (decision.requeue) {
      return host_.add_event("job.requeued", job_id, std::nullopt,
                             {{"after", released ? "lost run" : "run not started"}});
    }
    return host_.add_event(fmt::format("job.{}", to_string(decision.to)), job_id, run.number, end_data);
  });
  if (!committed) {
    host_.retry_later(fmt::format("lost:{}", job_id), again);
    return;
  }
  host_.metrics().run_finished(to_string(outcome));
  running_.erase(it);
  if (decision.requeue || decision.to == JobState::kHeld) {
    if (ActiveJob* a = host_.active_job(job_id)) {
      a->state = decision.to;
      a->conditions = a->has_conditions ? ConditionState::kUnknown : ConditionState::kNone;
      if (a->images != ImageState::kNone) a->images = ImageState::kUnchecked;  // checked again
    }
    if (decision.to == JobState::kHeld) host_.note_held_by_daemon(job_id, decision.reason);
  } else {
    host_.note_finished(job_id, decision.to);
  }
  host_.request_pass();
}

}  // namespace gpuq::daemon
