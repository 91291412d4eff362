// The Queue's side that deals with runs: starting them through shims, learning of their ends
// (pidfd readiness), settling outcomes, and recovering runs after a daemon restart.
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

void Queue::free_slots(const std::vector<int>& slots) {
  for (int slot : slots) holders_[slot].reset();
}

void Queue::start_run(int64_t job_id, const std::vector<int>& slots) {
  auto key = pending_keys_.find(job_id);
  if (key != pending_keys_.end()) {
    pending_.erase(key->second);
    pending_keys_.erase(key);
  }
  for (int slot : slots) holders_[slot] = job_id;
  auto job = load_job(job_id, false);
  if (!job) return fail_to_start(job_id, slots, job.error().message);
  auto last = store_.last_run_number(job_id);
  if (!last) return fail_to_start(job_id, slots, last.error().message);

  Run run;
  run.job_id = job_id;
  run.number = *last + 1;
  run.run_dir = options_.layout.run_dir(job_id, run.number);
  runner::RunContext context;
  context.job_id = job_id;
  context.run_number = run.number;
  context.job_dir = options_.layout.job_dir(job_id);
  context.run_dir = run.run_dir;
  context.run_id = new_run_id(job_id, run.number);
  context.resume = false;
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
  spec.kill_grace_ms = options_.kill_grace_ms;
  if (auto made = os::make_dirs(run.run_dir); !made) {
    return fail_to_start(job_id, slots, made.error().message);
  }
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
    auto id = store_.insert_run(run);
    if (!id) return tl::unexpected(id.error());
    run.id = *id;
    if (auto st = set_state(*job, JobState::kRunning, ""); !st) return st;
    return add_event("job.started", job_id, run.number, {{"gpus", gpus}, {"pid", run.shim_pid}});
  });
  if (!committed) return fail_to_start(job_id, slots, committed.error().message);
  // Only now, with the run on record, may the job's code run.
  if (auto released = shim->release(); !released) {
    // The shim died before it could start; its exit is collected like any other.
    (void)released;
  }
  LiveRun live;
  live.run = std::move(run);
  live.slots = slots;
  running_[job_id] = std::move(live);
  watch_exit(job_id);
}

void Queue::fail_to_start(int64_t job_id, const std::vector<int>& slots, const std::string& why) {
  free_slots(slots);
  auto job = load_job(job_id, false);
  if (job && job->state == JobState::kPending) {
    (void)commit([&]() -> Status {
      if (auto st = set_state(*job, JobState::kFailed, "could not start: " + why); !st) return st;
      return add_event("job.failed", job_id, std::nullopt, {{"error", why}});
    });
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

void Queue::on_shim_exit(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || stopping_) return;
  LiveRun live = std::move(it->second);
  running_.erase(it);
  ::waitpid(live.run.shim_pid, nullptr, WNOHANG);  // reap it when it is our child
  settle_run(live.run, live.slots, false);
  request_pass();
}

void Queue::settle_run(const Run& run, const std::vector<int>& slots, bool while_down) {
  auto job = load_job(run.job_id, false);
  if (!job) return free_slots(slots);
  auto record = runner::read_exit_record(run.run_dir);
  if (!record) {
    settle_lost_run(*job, run);
    return free_slots(slots);
  }
  RunOutcome outcome = RunOutcome::kFailed;
  JobState state = JobState::kFailed;
  std::string reason;
  if (run.stop_reason == "cancel") {
    outcome = RunOutcome::kCancelled;
    state = JobState::kCancelled;
    reason = "cancelled by request while running";
  } else if (!record->error.empty()) {
    reason = "could not start: " + record->error;
  } else if (record->exit_code == 0) {
    outcome = RunOutcome::kSucceeded;
    state = JobState::kSucceeded;
  } else {
    reason = "run " + std::to_string(run.number) + ": " + exit_text(*record);
  }
  nlohmann::json data = {{"exit_code", record->exit_code ? nlohmann::json(*record->exit_code) : nlohmann::json(nullptr)},
                         {"signal", record->signal ? nlohmann::json(*record->signal) : nlohmann::json(nullptr)},
                         {"outcome", to_string(outcome)}};
  if (record->leftovers_killed > 0) data["leftovers_killed"] = record->leftovers_killed;
  if (while_down) data["while_daemon_down"] = true;
  int64_t ended = record->ended_at_ms ? record->ended_at_ms : wall_now_ms();
  auto committed = commit([&]() -> Status {
    auto st = store_.finish_run(run.id, ended, record->exit_code, record->signal, outcome);
    if (!st) return st;
    if (st = set_state(*job, state, reason); !st) return st;
    return add_event(fmt::format("job.{}", to_string(state)), job->id, run.number, data);
  });
  if (!committed) {
    std::fprintf(stderr, "gpuq daemon: recording the end of job %lld failed: %s\n",
                 static_cast<long long>(job->id), committed.error().message.c_str());
  }
  free_slots(slots);
}

void Queue::settle_lost_run(const Job& job, const Run& run) {
  kill_orphaned_session(run);
  bool requeue = job.lost_count == 0 && run.stop_reason.empty();
  std::string reason =
      requeue ? fmt::format("run {} was lost (its shim vanished, e.g. a power cut); requeued once",
                            run.number)
              : fmt::format("run {} was lost (its shim vanished) after an earlier lost run; not "
                            "requeued again — inspect it, then resubmit",
                            run.number);
  auto committed = commit([&]() -> Status {
    auto st = store_.finish_run(run.id, wall_now_ms(), std::nullopt, std::nullopt, RunOutcome::kLost);
    if (!st) return st;
    if (st = store_.set_lost_count(job.id, job.lost_count + 1); !st) return st;
    JobState to = requeue ? JobState::kPending
                          : (run.stop_reason == "cancel" ? JobState::kCancelled : JobState::kFailed);
    if (st = set_state(job, to, reason); !st) return st;
    if (st = add_event("job.lost", job.id, run.number, {{"requeued", requeue}}); !st) return st;
    if (requeue) return add_event("job.requeued", job.id, std::nullopt, {{"after", "lost run"}});
    return add_event(fmt::format("job.{}", to_string(to)), job.id, run.number, {{"outcome", "lost"}});
  });
  if (committed && requeue) enqueue(job.id, job.spec.priority, job.queue_order, job.spec.gpus);
}

Status Queue::recover() {
  auto runs = store_.running_runs();
  if (!runs) return tl::unexpected(runs.error());
  for (const Run& run : *runs) {
    std::vector<int> slots = slots_of(run);
    if (runner::read_exit_record(run.run_dir)) {
      settle_run(run, slots, true);
      continue;
    }
    if (os::is_same_process(run.shim_pid, run.shim_start_ticks)) {
      for (int slot : slots) holders_[slot] = run.job_id;
      auto st = commit([&] { return add_event("job.adopted", run.job_id, run.number, {{"pid", run.shim_pid}}); });
      if (!st) return st;
      LiveRun live;
      live.run = run;
      live.slots = slots;
      running_[run.job_id] = std::move(live);
      watch_exit(run.job_id);
      continue;
    }
    auto job = load_job(run.job_id, false);
    if (!job) return tl::unexpected(job.error());
    settle_lost_run(*job, run);
  }
  auto queued = store_.queued_jobs();
  if (!queued) return tl::unexpected(queued.error());
  for (const auto& q : *queued) enqueue(q.id, q.priority, q.queue_order, q.gpus);
  return ok();
}

Status Queue::start() {
  auto order = store_.max_queue_order();
  if (!order) return tl::unexpected(order.error());
  next_order_ = *order;
  auto seq = store_.last_seq();
  if (!seq) return tl::unexpected(seq.error());
  last_seq_ = *seq;
  auto recorded = commit([&]() -> Status {
    if (auto st = store_.replace_resources(inventory_.resources); !st) return st;
    if (auto st = store_.set_meta("gpu_mode", inventory_.mode); !st) return st;
    return store_.set_meta("gpu_note", inventory_.note);
  });
  if (!recorded) return recorded;
  if (auto recovered = recover(); !recovered) return recovered;
  auto started = commit([&] {
    return add_event("daemon.started", std::nullopt, std::nullopt,
                     {{"pid", ::getpid()}, {"gpu_mode", inventory_.mode},
                      {"gpus", inventory_.resources.size()}, {"note", inventory_.note},
                      {"adopted", running_.size()}, {"pending", pending_.size()}});
  });
  if (!started) return started;
  request_pass();
  return ok();
}

}  // namespace gpuq::daemon
