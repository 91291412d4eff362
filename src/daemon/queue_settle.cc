// The Queue's side that ends runs: learning of a shim's exit, judging the run's end from its
// exit record (run_end.h; DONE_IF verified off-thread), recording it — and, when the store
// cannot take it, keeping the run as it is in memory and trying again until it is recorded —
// and recovering runs after a daemon restart or a reboot.
#include <csignal>
#include <fmt/format.h>

#include "base/time.h"
#include "daemon/queue.h"

namespace gpuq::daemon {

void Queue::on_shim_exit(int64_t job_id) {
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

void Queue::settle_exited() {
  std::vector<int64_t> exited;
  exited.swap(exited_);
  if (stopping_) return;
  std::vector<int64_t> ended;
  ended_batch_ = &ended;  // finish_run() collects instead of committing
  for (int64_t job_id : exited) settle_run(job_id, false);
  ended_batch_ = nullptr;
  finish_ended_runs(ended);
  request_pass();
}

void Queue::finish_ended_runs(const std::vector<int64_t>& job_ids) {
  if (job_ids.size() < 2) {
    for (int64_t job_id : job_ids) finish_run(job_id);
    return;
  }
  std::vector<Finish> finishes;
  for (int64_t job_id : job_ids) finishes.push_back(prepare_finish(job_id));
  // One transaction, one fsync: every end on record (its events in this order) before any
  // listener hears of one.
  auto committed = commit([&]() -> Status {
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

void Queue::settle_run(int64_t job_id, bool while_down) {
  auto it = running_.find(job_id);
  if (it == running_.end() || it->second.ended || it->second.settling) return;
  LiveRun& live = it->second;
  const Run& run = live.run;
  auto record = world_.read_exit_record(run.run_dir);
  if (!record && record.error().code != Code::kNotFound) {
    // Unreadable now (out of fds, an I/O error): that says nothing about how the run ended,
    // and a run is never called lost for it.
    std::fprintf(stderr, "gpuq daemon: reading the exit record of job %lld: %s; trying again\n",
                 static_cast<long long>(job_id), record.error().message.c_str());
    retry_later(fmt::format("settle:{}", job_id), [this, job_id, while_down] { settle_run(job_id, while_down); });
    return;
  }
  auto job = load_job(job_id, false);
  if (!job) {
    retry_later(fmt::format("settle:{}", job_id), [this, job_id, while_down] { settle_run(job_id, while_down); });
    return;
  }
  if (!live.cleanup_begun) {
    live.cleanup_begun = true;
    begin_cleanup(run.id,
                  {run.job_id, run.number, run.run_id, std::move(live.slots), std::move(live.lanes),
                   run.preempted_by, std::nullopt},
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
  RunEnd end = judge_run_end(run, *record, !job->spec.done_if.empty(), world_.now_ms(), while_down);
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
    request_pass();
  });
}

void Queue::finish_run(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || !it->second.ended) return;
  if (ended_batch_) {
    ended_batch_->push_back(job_id);
    return;
  }
  Finish finish = prepare_finish(job_id);
  if (!commit([&] { return write_finish(finish); })) {
    // The run stays as the store has it — running — and its end is recorded once it can be.
    retry_later(fmt::format("finish:{}", job_id), [this, job_id] { finish_run(job_id); });
    return;
  }
  after_finish(finish);
}

Queue::Finish Queue::prepare_finish(int64_t job_id) {
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
  auto active = active_.find(job_id);
  f.tracked = active != active_.end();
  f.now_ms = world_.now_ms();
  f.after = decide_after_run(end.outcome, f.tracked ? active->second.failed_runs : 0,
                             f.tracked ? active->second.retries : 0,
                             f.tracked ? active->second.retry_delay_ms : -1, retry_policy(),
                             f.tracked, f.now_ms);
  end.data["outcome"] = to_string(end.outcome);
  if (end.verified) end.data["verified"] = *end.verified;
  if (auto p = peaks_.find(run.id); p != peaks_.end()) {
    f.peak = p->second;
    end.data["peak_gpu_mem_mib"] = p->second;
  }
  return f;
}

Status Queue::write_finish(Finish& f) {
  int64_t job_id = f.job_id;
  const LiveRun& live = running_.at(job_id);
  const Run& run = live.run;
  RunEnd& end = f.end;
  const AfterRun& after = f.after;
  auto active = active_.find(job_id);
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
    if (st = set_state(job_id, JobState::kRunning, JobState::kPending, reason); !st) return st;
    nlohmann::json data = end.data;
    data["by"] = run.preempted_by != 0 ? nlohmann::json(run.preempted_by) : nlohmann::json(nullptr);
    data["mode"] = to_string(active->second.preempt);
    data["how"] = end.how;
    return add_event("job.preempted", job_id, run.number, data);
  }
  if (after.retry) {
    std::string reason = fmt::format("{}; retry {}/{}", end.reason, after.failed_runs, active->second.retries);
    if (st = set_state(job_id, JobState::kRunning, JobState::kPending, reason); !st) return st;
    if (st = store_.set_retry_at(job_id, after.retry_at_ms); !st) return st;
    if (st = add_event(end.outcome == RunOutcome::kTimedOut ? "job.timed_out" : "job.failed_run", job_id, run.number, end.data); !st) return st;
    return add_event("job.retrying", job_id, run.number,
                     {{"attempt", after.failed_runs}, {"retries", active->second.retries},
                      {"at", format_rfc3339(after.retry_at_ms)}, {"delay_ms", after.retry_at_ms - f.now_ms}});
  }
  if (st = set_state(job_id, JobState::kRunning, after.to, end.reason); !st) return st;
  return add_event(fmt::format("job.{}", to_string(after.to)), job_id, run.number, end.data);
}

void Queue::after_finish(const Finish& f) {
  int64_t job_id = f.job_id;
  auto it = running_.find(job_id);
  int64_t run_id = it->second.run.id;
  peaks_.erase(run_id);
  metrics_.run_finished(to_string(f.end.outcome));
  if (f.end.outcome == RunOutcome::kSucceeded && f.peak) {
    if (auto job = load_job(job_id, false); job && !job->spec.name.empty()) footprint_names_.insert(job->spec.name);
  }
  running_.erase(it);
  auto active = active_.find(job_id);
  if (f.after.to == JobState::kPending && f.tracked && active != active_.end()) {
    ActiveJob& job = active->second;
    job.state = JobState::kPending;
    job.failed_runs = f.after.failed_runs;
    if (f.after.retry) job.retry_at_ms = f.after.retry_at_ms;
    job.conditions = job.has_conditions ? ConditionState::kUnknown : ConditionState::kNone;
  } else {
    note_finished(job_id, f.after.to);
  }
  request_pass();
}

void Queue::settle_lost_run(int64_t job_id, bool released) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  LiveRun& live = it->second;
  const Run& run = live.run;
  auto again = [this, job_id, released] { settle_lost_run(job_id, released); };
  auto job = load_job(job_id, !released);  // a run that never began counts those before it
  if (!job) {
    retry_later(fmt::format("lost:{}", job_id), again);
    return;
  }
  if (!live.ended) {
    // What is left of its session goes, off this thread (a run of an earlier boot has
    // nothing left, and its session id may belong to anyone now).
    bool this_boot = run.boot_id.empty() || run.boot_id == options_.boot_id;
    if (this_boot) world_.sweep_session(run.shim_pid, run.shim_start_ticks, [](int) {});
    RunEnd lost;
    lost.outcome = RunOutcome::kLost;
    lost.ended_ms = world_.now_ms();
    live.ended = lost;
  }
  RunOutcome outcome = released ? RunOutcome::kLost : RunOutcome::kNotStarted;
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
  auto committed = commit([&]() -> Status {
    auto st = store_.finish_run(run.id, live.ended->ended_ms, std::nullopt, std::nullopt, outcome);
    if (!st) return st;
    if (!live.stop_recorded) {
      if (st = store_.set_stop_reason(run.id, run.stop_reason); !st) return st;
    }
    if (released) {
      if (st = store_.set_lost_count(job_id, job->lost_count + 1); !st) return st;
    }
    if (st = set_state(job_id, JobState::kRunning, decision.to, decision.reason); !st) return st;
    st = add_event(released ? "job.lost" : "job.not_started", job_id, run.number, run_data);
    if (!st) return st;
    if (decision.requeue) {
      return add_event("job.requeued", job_id, std::nullopt, {{"after", released ? "lost run" : "run not started"}});
    }
    return add_event(fmt::format("job.{}", to_string(decision.to)), job_id, run.number, end_data);
  });
  if (!committed) {
    retry_later(fmt::format("lost:{}", job_id), again);
    return;
  }
  peaks_.erase(run.id);
  metrics_.run_finished(to_string(outcome));
  running_.erase(it);
  if (decision.requeue || decision.to == JobState::kHeld) {
    if (auto a = active_.find(job_id); a != active_.end()) {
      a->second.state = decision.to;
      a->second.conditions = a->second.has_conditions ? ConditionState::kUnknown : ConditionState::kNone;
    }
    if (decision.to == JobState::kHeld) held_reasons_[job_id] = decision.reason;
  } else {
    note_finished(job_id, decision.to);
  }
  request_pass();
}

Status Queue::recover() {
  // Every job's state, then the unfinished ones in full.
  auto states = store_.job_states();
  if (!states) return tl::unexpected(states.error());
  for (const auto& [id, state] : *states) {
    if (is_terminal(state)) finished_[id] = state;
  }
  auto reservations = store_.reservations();
  if (!reservations) return tl::unexpected(reservations.error());
  for (const auto& r : *reservations) reservations_.push_back({r.name, r.gpus});
  auto jobs = store_.list_jobs(true, true);
  if (!jobs) return tl::unexpected(jobs.error());
  for (const Job& job : *jobs) {
    auto active = make_active(job.id, job);
    if (!active) return tl::unexpected(active.error());
    track(std::move(*active));
    if (job.state == JobState::kHeld && !job.reason.empty() && job.reason != kHeldByRequest) {
      held_reasons_[job.id] = job.reason;
    }
  }
  auto runs = store_.running_runs();
  if (!runs) return tl::unexpected(runs.error());
  for (const Run& run : *runs) {
    if (auto st = recover_run(run); !st) return st;
  }
  return recover_cleanups();
}

Status Queue::recover_run(const Run& run) {
  LiveRun live;
  live.run = run;
  live.slots = slots_of(run);
  if (auto it = active_.find(run.job_id); it != active_.end()) live.lanes = it->second.lanes;
  if (run.peak_gpu_mem_mib) peaks_[run.id] = *run.peak_gpu_mem_mib;  // never lower it
  hold_slots(run.job_id, live.slots, live.lanes);
  int64_t job_id = run.job_id;
  running_[job_id] = std::move(live);
  auto record = world_.read_exit_record(run.run_dir);
  if (record) {
    settle_run(job_id, true);
    return ok();
  }
  // A run of an earlier boot cannot be alive: a pid and start time from then may match an
  // unrelated process of this boot.
  bool earlier_boot = !run.boot_id.empty() && run.boot_id != options_.boot_id;
  if (!earlier_boot) {
    auto shim = world_.adopt_shim(run.shim_pid, run.shim_start_ticks);
    if (shim) {
      auto st = commit([&] { return add_event("job.adopted", job_id, run.number, {{"pid", run.shim_pid}}); });
      if (!st) return st;
      running_.at(job_id).shim = std::move(*shim);
      watch_exit(job_id);
      arm_timeout(job_id);
      arm_yield_deadline(job_id);
      return ok();
    }
    if (shim.error().code != Code::kNotFound) {
      return fail(shim.error().code, fmt::format("cannot tell whether the shim of job {} (pid {}) still runs: {}",
                                                 job_id, run.shim_pid, shim.error().message));
    }
  }
  // Gone: it may have finished between the first look and the process check.
  settle_run(job_id, true);
  return ok();
}

Status Queue::start() {
  auto order = store_.max_queue_order();
  if (!order) return tl::unexpected(order.error());
  next_order_ = *order;
  auto seq = store_.last_seq();
  if (!seq) return tl::unexpected(seq.error());
  last_seq_ = *seq;
  // The all-time counters start from the record, before recovery adds to it.
  auto event_counts = store_.event_counts();
  if (!event_counts) return tl::unexpected(event_counts.error());
  auto run_counts = store_.run_counts();
  if (!run_counts) return tl::unexpected(run_counts.error());
  metrics_.set_baseline(*event_counts, *run_counts);
  auto draining = store_.meta("draining");
  if (!draining) return tl::unexpected(draining.error());
  draining_ = *draining && **draining == "1";
  auto recorded = commit([&]() -> Status {
    if (auto st = store_.replace_resources(inventory_.resources); !st) return st;
    if (auto st = store_.set_meta("gpu_mode", inventory_.mode); !st) return st;
    return store_.set_meta("gpu_note", inventory_.note);
  });
  if (!recorded) return recorded;
  auto names = store_.footprint_names();
  if (!names) return tl::unexpected(names.error());
  footprint_names_.insert(names->begin(), names->end());
  if (auto recovered = recover(); !recovered) return recovered;
  auto started = commit([&] {
    return add_event("daemon.started", std::nullopt, std::nullopt,
                     {{"pid", ::getpid()}, {"gpu_mode", inventory_.mode},
                      {"gpus", inventory_.resources.size()}, {"note", inventory_.note},
                      {"adopted", running_.size()}, {"active", active_.size()},
                      {"draining", draining_}, {"boot_id", options_.boot_id}});
  });
  if (!started) return started;
  if (auto watching = start_watching(); !watching) return watching;
  start_pruning();
  request_pass();
  return ok();
}

}  // namespace gpuq::daemon
