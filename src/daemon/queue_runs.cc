// The Queue's side that deals with runs: starting them through shims, timeouts, learning of
// their ends (pidfd readiness), settling outcomes (retries, DONE_IF verification), and
// recovering runs after a daemon restart.
#include <csignal>
#include <fmt/format.h>
#include <random>
#include <sys/wait.h>
#include <thread>

#include "base/time.h"
#include "daemon/queue.h"
#include "os/process.h"
#include "runner/launcher.h"
#include "runner/run_env.h"
#include "runner/run_files.h"

namespace gpuq::daemon {

// How a run ended, as the Queue records it.
struct RunEnd {
  RunOutcome outcome = RunOutcome::kFailed;
  std::optional<int> exit_code;
  std::optional<int> signal;
  int64_t ended_ms = 0;
  std::string reason;
  nlohmann::json data = nlohmann::json::object();
  std::optional<bool> verified;
  std::string how;  // preempted: "yielded" or "stopped"
};

namespace {

std::string new_run_id(int64_t job_id, int run_number) {
  static std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}-{}-{:016x}", job_id, run_number, rng());
}

std::string exit_text(const runner::ExitRecord& r) {
  if (r.signal) return fmt::format("killed by signal {} ({})", *r.signal, strsignal(*r.signal));
  if (r.exit_code) return fmt::format("exit code {}", *r.exit_code);
  return "no exit status";
}

// Kills what is left of a run whose shim vanished: every process still in the shim's session
// (the job never leaves it unless it calls setsid). While any member lives the kernel cannot
// reuse the session id as a pid, so a live process with that pid and other start ticks means
// the old session is already empty.
void kill_orphaned_session(const Run& run) {
  pid_t sid = run.shim_pid;
  if (sid <= 1) return;
  auto ticks = os::process_start_ticks(sid);
  if (ticks && *ticks != run.shim_start_ticks) return;
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto members = os::processes_in_session(sid);
    if (members.empty()) return;
    for (pid_t pid : members) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace

std::vector<int> Queue::slots_of(const Run& run) const {
  std::vector<int> slots;
  for (const auto& name : run.gpus) {
    for (size_t slot = 0; slot < inventory_.resources.size(); ++slot) {
      if (inventory_.resources[slot].name == name) slots.push_back(static_cast<int>(slot));
    }
  }
  return slots;
}

void Queue::hold_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes) {
  for (int slot : slots) holders_[slot].push_back(job_id);
  for (int lane : lanes) ++lane_used_[lane];
}

void Queue::free_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes) {
  for (int slot : slots) {
    auto& h = holders_[slot];
    if (auto it = std::find(h.begin(), h.end(), job_id); it != h.end()) h.erase(it);
  }
  for (int lane : lanes) lane_used_[lane] = std::max(0, lane_used_[lane] - 1);
}

int64_t Queue::retry_delay(const ActiveJob& job) const {
  double delay = static_cast<double>(job.retry_delay_ms >= 0 ? job.retry_delay_ms : config_.retry_delay_ms);
  for (int i = 1; i < job.failed_runs; ++i) delay *= config_.retry_backoff;
  return std::min<int64_t>(static_cast<int64_t>(delay), config_.retry_max_delay_ms);
}

void Queue::start_run(int64_t job_id, const std::vector<int>& slots) {
  auto active = active_.find(job_id);
  if (active == active_.end()) return;
  std::vector<int> lanes = active->second.lanes;
  hold_slots(job_id, slots, lanes);  // first: fail_to_start() frees exactly what was held
  auto job = load_job(job_id, false);
  if (!job) return fail_to_start(job_id, slots, job.error().message);
  auto last = store_.last_run(job_id);
  if (!last) return fail_to_start(job_id, slots, last.error().message);
  // A job that yielded its GPUs resumes from its checkpoint.
  bool resume = *last && (*last)->outcome == RunOutcome::kPreempted &&
                job->spec.preempt == PreemptMode::kYield;

  Run run;
  run.job_id = job_id;
  run.number = *last ? (*last)->number + 1 : 1;
  run.run_dir = options_.layout.run_dir(job_id, run.number);
  runner::RunContext context;
  context.job_id = job_id;
  context.run_number = run.number;
  context.job_dir = options_.layout.job_dir(job_id);
  context.run_dir = run.run_dir;
  context.run_id = new_run_id(job_id, run.number);
  context.resume = resume;
  run.run_id = context.run_id;
  for (int slot : slots) {
    const Resource& r = inventory_.resources[slot];
    context.held.push_back(&r);
    run.gpus.push_back(r.name);
    if (r.index) run.gpu_indices.push_back(*r.index);
  }
  runner::RunSpec spec;
  spec.argv = runner::run_argv(job->spec, context.job_dir);
  spec.env = runner::build_run_env(job->spec, context);
  spec.cwd = job->spec.cwd;
  spec.kill_grace_ms = config_.kill_grace_ms;
  if (auto made = os::make_dirs(run.run_dir); !made) return fail_to_start(job_id, slots, made.error().message);
  if (auto written = runner::write_run_spec(run.run_dir, spec); !written) {
    return fail_to_start(job_id, slots, written.error().message);
  }
  auto shim = options_.spawner ? options_.spawner->launch(run.run_dir)
                               : runner::launch_shim(options_.shim_executable, run.run_dir);
  if (!shim) return fail_to_start(job_id, slots, shim.error().message);
  run.shim_pid = shim->pid();
  run.shim_start_ticks = shim->start_ticks();
  run.started_at_ms = wall_now_ms();
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t i = 0; i < run.gpus.size(); ++i) {
    if (run.gpu_indices.size() == run.gpus.size()) {
      gpus.push_back(run.gpu_indices[i]);
    } else {
      gpus.push_back(run.gpus[i]);
    }
  }
  auto committed = commit([&]() -> Status {
    auto id = store_.insert_run(run, job->spec.name);
    if (!id) return tl::unexpected(id.error());
    run.id = *id;
    if (auto st = set_state(job_id, JobState::kPending, JobState::kRunning, ""); !st) return st;
    if (auto st = add_event("job.started", job_id, run.number, {{"gpus", gpus}, {"pid", run.shim_pid}}); !st) return st;
    if (!resume) return ok();
    return add_event("job.resumed", job_id, run.number,
                     {{"after_run", (*last)->number}, {"preempted_by", (*last)->preempted_by}});
  });
  if (!committed) return fail_to_start(job_id, slots, committed.error().message);
  active->second.state = JobState::kRunning;
  // Only now, with the run on record, may the job's code run. A shim that died before this
  // is collected like any other exit.
  (void)shim->release();
  LiveRun live;
  live.run = std::move(run);
  live.slots = slots;
  live.lanes = std::move(lanes);
  running_[job_id] = std::move(live);
  watch_exit(job_id);
  arm_timeout(job_id);
  count_start(*job, running_.at(job_id).run);  // after the release: not on the start's path
}

void Queue::count_start(const Job& job, const Run& run) {
  // Queue wait: since the job last entered the queue (its submit, or a retry, a preemption or
  // a requeue after a lost run; see Store::requeued_at), so a retry's delay counts as waiting
  // but the time a finished job sat before `gpuq retry` does not.
  auto requeued = store_.requeued_at(job.id);
  int64_t queued_ms = std::max(job.submitted_at_ms, requeued ? *requeued : 0);
  double wait_s = static_cast<double>(run.started_at_ms - queued_ms) / 1000.0;
  std::optional<double> first;
  if (run.number == 1) first = static_cast<double>(run.started_at_ms - job.submitted_at_ms) / 1000.0;
  metrics_.run_started(wait_s, first);
}

void Queue::fail_to_start(int64_t job_id, const std::vector<int>& slots, const std::string& why) {
  auto active = active_.find(job_id);
  free_slots(job_id, slots, active != active_.end() ? active->second.lanes : std::vector<int>{});
  auto job = load_job(job_id, false);
  if (job && job->state == JobState::kPending) {
    auto committed = commit([&]() -> Status {
      if (auto st = set_state(job_id, JobState::kPending, JobState::kFailed, "could not start: " + why); !st) return st;
      return add_event("job.failed", job_id, std::nullopt, {{"error", why}});
    });
    if (committed) note_finished(job_id, JobState::kFailed);
  }
  request_pass();
}

void Queue::watch_exit(int64_t job_id) {
  LiveRun& live = running_.at(job_id);
  auto fd = os::open_pidfd(live.run.shim_pid);
  if (!fd) {
    // Already gone: settle it on the next turn of the loop.
    boost::asio::post(ioc_, [this, job_id] { on_shim_exit(job_id); });
    return;
  }
  live.exit_watch = std::make_unique<boost::asio::posix::stream_descriptor>(ioc_, *fd);
  live.exit_watch->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                              [this, job_id](const boost::system::error_code& ec) {
                                if (ec == boost::asio::error::operation_aborted) return;
                                on_shim_exit(job_id);
                              });
}

void Queue::arm_timeout(int64_t job_id) {
  auto active = active_.find(job_id);
  auto live = running_.find(job_id);
  if (active == active_.end() || live == running_.end() || active->second.timeout_ms <= 0) return;
  int64_t left = live->second.run.started_at_ms + active->second.timeout_ms - wall_now_ms();
  live->second.timeout = std::make_unique<boost::asio::steady_timer>(ioc_);
  live->second.timeout->expires_after(std::chrono::milliseconds(std::max<int64_t>(0, left)));
  live->second.timeout->async_wait([this, job_id](const boost::system::error_code& ec) {
    if (!ec) on_timeout(job_id);
  });
}

void Queue::on_timeout(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || stopping_ || !it->second.run.stop_reason.empty()) return;
  Run& run = it->second.run;
  auto committed = commit([&]() -> Status {
    if (auto st = store_.set_stop_reason(run.id, "timeout"); !st) return st;
    return add_event("job.timeout", job_id, run.number,
                     {{"timeout_ms", active_[job_id].timeout_ms}});
  });
  if (!committed) return;
  run.stop_reason = "timeout";
  if (os::is_same_process(run.shim_pid, run.shim_start_ticks)) ::kill(run.shim_pid, SIGTERM);
}

void Queue::on_shim_exit(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || stopping_) return;
  LiveRun live = std::move(it->second);
  running_.erase(it);
  if (live.timeout) live.timeout->cancel();
  ::waitpid(live.run.shim_pid, nullptr, WNOHANG);  // reap it when it is our child
  settle_run(std::move(live), false);
  request_pass();
}

void Queue::settle_run(LiveRun live, bool while_down) {
  const Run& run = live.run;
  auto record = runner::read_exit_record(run.run_dir);
  begin_cleanup(run.id,
                {run.job_id, run.number, run.run_id, std::move(live.slots), std::move(live.lanes), run.preempted_by},
                run.shim_start_ticks);
  live.slots.clear();
  live.lanes.clear();
  if (!record) {
    auto job = load_job(run.job_id, false);
    if (job) settle_lost_run(*job, run);
    return;
  }
  RunEnd end;
  end.exit_code = record->exit_code;
  end.signal = record->signal;
  end.ended_ms = record->ended_at_ms ? record->ended_at_ms : wall_now_ms();
  if (run.stop_reason == "cancel") {
    end.outcome = RunOutcome::kCancelled;
    end.reason = "cancelled by request while running";
  } else if (run.stop_reason == "timeout") {
    end.outcome = RunOutcome::kTimedOut;
    end.reason = fmt::format("run {} timed out", run.number);
  } else if (run.preempt_deadline_ms != 0 && record->exit_code == kYieldExitCode) {
    // It was asked to yield (even if the request was withdrawn since) and did.
    end.outcome = RunOutcome::kPreempted;
    end.how = "yielded";
  } else if (run.stop_reason == "preempt" && record->stop_requested) {
    end.outcome = RunOutcome::kPreempted;
    end.how = "stopped";
  } else if (!record->error.empty()) {
    end.reason = "could not start: " + record->error;
  } else if (record->exit_code == 0) {
    end.outcome = RunOutcome::kSucceeded;
  } else {
    end.reason = "run " + std::to_string(run.number) + ": " + exit_text(*record);
  }
  end.data = {{"exit_code", record->exit_code ? nlohmann::json(*record->exit_code) : nlohmann::json(nullptr)},
              {"signal", record->signal ? nlohmann::json(*record->signal) : nlohmann::json(nullptr)}};
  if (record->leftovers_killed > 0) end.data["leftovers_killed"] = record->leftovers_killed;
  if (while_down) end.data["while_daemon_down"] = true;
  auto job = load_job(run.job_id, false);
  if (end.outcome == RunOutcome::kSucceeded && job && !job->spec.done_if.empty()) {
    // Exit 0 counts only if DONE_IF now holds: check it off-thread, then finish.
    ConditionRequest request;
    request.job_id = run.job_id;
    request.cwd = job->spec.cwd;
    request.env = job->spec.env;
    request.done_if = job->spec.done_if;
    request.timeout = Millis(config_.requires_timeout_ms);
    live.settling = true;
    int64_t job_id = run.job_id;
    running_[job_id] = std::move(live);
    checker_.check(std::move(request), [this, job_id, end](ConditionResult result) mutable {
      auto it = running_.find(job_id);
      if (it == running_.end()) return;
      LiveRun settled = std::move(it->second);
      running_.erase(it);
      end.verified = result.done;
      if (settled.run.stop_reason == "cancel") {
        end.outcome = RunOutcome::kCancelled;
        end.reason = "cancelled by request";
      } else if (!result.done) {
        end.outcome = RunOutcome::kFailed;
        end.reason = fmt::format("run {} exited 0 but DONE_IF does not hold", settled.run.number);
      }
      finish_run(std::move(settled), end);
      request_pass();
    });
    return;
  }
  finish_run(std::move(live), end);
}

void Queue::finish_run(LiveRun live, const RunEnd& end_in) {
  RunEnd end = end_in;
  const Run& run = live.run;
  int64_t job_id = run.job_id;
  auto active = active_.find(job_id);
  JobState to = JobState::kFailed;
  if (end.outcome == RunOutcome::kSucceeded) to = JobState::kSucceeded;
  if (end.outcome == RunOutcome::kCancelled) to = JobState::kCancelled;
  bool counts = end.outcome == RunOutcome::kFailed || end.outcome == RunOutcome::kTimedOut;
  int failed_runs = active != active_.end() ? active->second.failed_runs + (counts ? 1 : 0) : 0;
  int retries = active != active_.end() ? active->second.retries : 0;
  int64_t retry_at = 0;
  bool preempted = end.outcome == RunOutcome::kPreempted && active != active_.end();
  if (preempted) to = JobState::kPending;  // back in its place; never counts as a failure
  if (counts && failed_runs <= retries && active != active_.end()) {
    active->second.failed_runs = failed_runs;
    retry_at = wall_now_ms() + retry_delay(active->second);
    to = JobState::kPending;
  }
  end.data["outcome"] = to_string(end.outcome);
  if (end.verified) end.data["verified"] = *end.verified;
  std::optional<int64_t> peak;
  if (auto p = peaks_.find(run.id); p != peaks_.end()) {
    peak = p->second;
    end.data["peak_gpu_mem_mib"] = p->second;
    peaks_.erase(p);
  }
  auto committed = commit([&]() -> Status {
    auto st = store_.finish_run(run.id, end.ended_ms, end.exit_code, end.signal, end.outcome);
    if (!st) return st;
    if (peak) {
      if (st = store_.set_peak_gpu_mem(run.id, *peak); !st) return st;
    }
    if (end.verified) {
      if (st = store_.set_run_verified(run.id, *end.verified); !st) return st;
    }
    if (preempted) {
      std::string reason = run.preempted_by != 0
                               ? fmt::format("preempted by job {} (run {} {}); back in the queue in its place",
                                             run.preempted_by, run.number, end.how)
                               : fmt::format("run {} yielded; back in the queue in its place", run.number);
      if (st = set_state(job_id, JobState::kRunning, JobState::kPending, reason); !st) return st;
      end.data["by"] = run.preempted_by != 0 ? nlohmann::json(run.preempted_by) : nlohmann::json(nullptr);
      end.data["mode"] = to_string(active->second.preempt);
      end.data["how"] = end.how;
      return add_event("job.preempted", job_id, run.number, end.data);
    }
    if (to == JobState::kPending) {
      std::string reason = fmt::format("{}; retry {}/{}", end.reason, failed_runs, retries);
      if (st = set_state(job_id, JobState::kRunning, JobState::kPending, reason); !st) return st;
      if (st = store_.set_retry_at(job_id, retry_at); !st) return st;
      if (st = add_event(end.outcome == RunOutcome::kTimedOut ? "job.timed_out" : "job.failed_run", job_id, run.number, end.data); !st) return st;
      return add_event("job.retrying", job_id, run.number,
                       {{"attempt", failed_runs}, {"retries", retries}, {"at", format_rfc3339(retry_at)},
                        {"delay_ms", retry_at - wall_now_ms()}});
    }
    if (st = set_state(job_id, JobState::kRunning, to, end.reason); !st) return st;
    return add_event(fmt::format("job.{}", to_string(to)), job_id, run.number, end.data);
  });
  if (!committed) {
    std::fprintf(stderr, "gpuq daemon: recording the end of job %lld failed: %s\n",
                 static_cast<long long>(job_id), committed.error().message.c_str());
    return;
  }
  metrics_.run_finished(to_string(end.outcome));
  if (end.outcome == RunOutcome::kSucceeded && peak) {
    if (auto job = load_job(job_id, false); job && !job->spec.name.empty()) footprint_names_.insert(job->spec.name);
  }
  if (to == JobState::kPending) {
    active->second.state = JobState::kPending;
    active->second.retry_at_ms = retry_at;
    active->second.conditions = active->second.has_conditions ? ConditionState::kUnknown : ConditionState::kNone;
  } else {
    note_finished(job_id, to);
  }
}

void Queue::settle_lost_run(const Job& job, const Run& run) {
  kill_orphaned_session(run);
  peaks_.erase(run.id);
  bool requeue = job.lost_count == 0 && run.stop_reason.empty();
  std::string reason =
      requeue ? fmt::format("run {} was lost (its shim vanished, e.g. a power cut); requeued once",
                            run.number)
              : fmt::format("run {} was lost (its shim vanished) after an earlier lost run; not "
                            "requeued again — inspect it, then resubmit",
                            run.number);
  JobState to = requeue ? JobState::kPending
                        : (run.stop_reason == "cancel" ? JobState::kCancelled : JobState::kFailed);
  auto committed = commit([&]() -> Status {
    auto st = store_.finish_run(run.id, wall_now_ms(), std::nullopt, std::nullopt, RunOutcome::kLost);
    if (!st) return st;
    if (st = store_.set_lost_count(job.id, job.lost_count + 1); !st) return st;
    if (st = set_state(job.id, JobState::kRunning, to, reason); !st) return st;
    if (st = add_event("job.lost", job.id, run.number, {{"requeued", requeue}}); !st) return st;
    if (requeue) return add_event("job.requeued", job.id, std::nullopt, {{"after", "lost run"}});
    return add_event(fmt::format("job.{}", to_string(to)), job.id, run.number, {{"outcome", "lost"}});
  });
  if (!committed) return;
  metrics_.run_finished(to_string(RunOutcome::kLost));
  if (requeue) {
    if (auto it = active_.find(job.id); it != active_.end()) {
      it->second.state = JobState::kPending;
      it->second.conditions = it->second.has_conditions ? ConditionState::kUnknown : ConditionState::kNone;
    }
  } else {
    note_finished(job.id, to);
  }
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
    active_[job.id] = std::move(*active);
  }
  auto runs = store_.running_runs();
  if (!runs) return tl::unexpected(runs.error());
  for (const Run& run : *runs) {
    LiveRun live;
    live.run = run;
    live.slots = slots_of(run);
    if (auto it = active_.find(run.job_id); it != active_.end()) live.lanes = it->second.lanes;
    if (run.peak_gpu_mem_mib) peaks_[run.id] = *run.peak_gpu_mem_mib;  // never lower it
    hold_slots(run.job_id, live.slots, live.lanes);
    if (runner::read_exit_record(run.run_dir)) {
      settle_run(std::move(live), true);
      continue;
    }
    if (os::is_same_process(run.shim_pid, run.shim_start_ticks)) {
      auto st = commit([&] { return add_event("job.adopted", run.job_id, run.number, {{"pid", run.shim_pid}}); });
      if (!st) return st;
      running_[run.job_id] = std::move(live);
      watch_exit(run.job_id);
      arm_timeout(run.job_id);
      arm_yield_deadline(run.job_id);
      continue;
    }
    if (runner::read_exit_record(run.run_dir)) {
      // It finished between the first look and the process check.
      settle_run(std::move(live), true);
      continue;
    }
    begin_cleanup(run.id, {run.job_id, run.number, run.run_id, live.slots, live.lanes}, run.shim_start_ticks);
    auto job = load_job(run.job_id, false);
    if (!job) return tl::unexpected(job.error());
    settle_lost_run(*job, run);
  }
  return recover_cleanups();
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
  processes_ = os::make_linux_process_table();
  cleaner_ = std::make_unique<runner::Cleaner>(
      os::make_linux_process_table(),
      runner::CleanupLimits{config_.cleanup_poll_ms, config_.kill_grace_ms, config_.cleanup_limit_ms});
  if (auto recovered = recover(); !recovered) return recovered;
  if (options_.probe) {
    prober_ = std::make_unique<Prober>(
        std::move(options_.probe), config_.probe_interval_ms,
        [this](Result<gpu::ProbeSample> sample) {
          boost::asio::post(ioc_, [this, sample = std::move(sample)]() mutable { on_probe(std::move(sample)); });
        });
  }
  auto started = commit([&] {
    return add_event("daemon.started", std::nullopt, std::nullopt,
                     {{"pid", ::getpid()}, {"gpu_mode", inventory_.mode},
                      {"gpus", inventory_.resources.size()}, {"note", inventory_.note},
                      {"adopted", running_.size()}, {"active", active_.size()},
                      {"draining", draining_}});
  });
  if (!started) return started;
  if (auto watching = start_watching(); !watching) return watching;
  request_pass();
  return ok();
}

}  // namespace gpuq::daemon
