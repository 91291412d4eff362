#include "daemon/queue.h"

#include <csignal>
#include <filesystem>
#include <fmt/format.h>

#include "base/time.h"
#include "os/process.h"
#include "runner/run_env.h"
#include "spec/script.h"

namespace gpuq::daemon {
namespace {

std::string gpu_count_text(const gpu::Inventory& inventory) {
  size_t n = inventory.resources.size();
  return fmt::format("{} GPU{} ({})", n, n == 1 ? "" : "s",
                     inventory.mode == "fake" ? fmt::format("fake:{}", n) : inventory.mode);
}

}  // namespace

Queue::Queue(boost::asio::io_context& ioc, store::Store& store, gpu::Inventory inventory,
             QueueOptions options)
    : ioc_(ioc),
      store_(store),
      inventory_(std::move(inventory)),
      options_(std::move(options)),
      holders_(inventory_.resources.size()) {}

Queue::~Queue() = default;

Status Queue::commit(const std::function<Status()>& fn) {
  events_added_ = false;
  auto result = store_.transaction(fn);
  if (result && events_added_ && listener_) listener_(last_seq_);
  return result;
}

Status Queue::add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                        nlohmann::json data) {
  Event event;
  event.time_ms = wall_now_ms();
  event.kind = kind;
  event.job = job;
  event.run = run;
  event.data = std::move(data);
  auto seq = store_.append_event(std::move(event));
  if (!seq) return tl::unexpected(seq.error());
  last_seq_ = *seq;
  events_added_ = true;
  return ok();
}

Status Queue::set_state(const Job& job, JobState to, const std::string& reason) {
  if (!is_legal_transition(job.state, to)) {
    return fail(Code::kInternal, fmt::format("job {}: illegal transition {} -> {}", job.id,
                                             to_string(job.state), to_string(to)));
  }
  std::optional<int64_t> finished;
  if (is_terminal(to)) finished = wall_now_ms();
  return store_.set_job_state(job.id, to, reason, finished);
}

Result<Job> Queue::load_job(int64_t id, bool with_runs) {
  auto job = store_.find_job(id, with_runs);
  if (!job) return tl::unexpected(job.error());
  if (!*job) return fail(Code::kNotFound, fmt::format("no job {}", id));
  return std::move(**job);
}

Result<Submitted> Queue::submit(JobSpec spec) {
  if (stopping_) return fail(Code::kUnavailable, "the daemon is shutting down; submit again later");
  if (spec.gpus < 0) {
    return fail(Code::kInvalidArgument,
                fmt::format("a job cannot ask for {} GPUs; use --gpus 0 or more", spec.gpus));
  }
  if (spec.gpus > static_cast<int>(inventory_.resources.size())) {
    return fail(Code::kInvalidArgument,
                fmt::format("job asks for {} GPU{}; this machine has {}", spec.gpus,
                            spec.gpus == 1 ? "" : "s", gpu_count_text(inventory_)));
  }
  if (spec.cwd.empty() || spec.cwd[0] != '/') {
    return fail(Code::kInvalidArgument,
                fmt::format("the working directory '{}' must be an absolute path", spec.cwd));
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(spec.cwd, ec)) {
    return fail(Code::kInvalidArgument,
                fmt::format("the working directory {} does not exist or is not a directory",
                            spec.cwd));
  }
  if (!spec.script_text.empty() || !spec.script_name.empty()) {
    auto checked = spec::check_script_text(spec.script_name, spec.script_text);
    if (!checked) return tl::unexpected(checked.error());
  }
  if (spec.script_text.empty() == spec.argv.empty()) {
    return fail(Code::kInvalidArgument,
                "give either a script or a command (`-- CMD ARGS`), not both or neither");
  }
  if (!spec.name.empty()) {
    auto existing = store_.find_job_by_name(spec.name, true);
    if (!existing) return tl::unexpected(existing.error());
    if (*existing) {
      if (same_work((*existing)->spec, spec)) return Submitted{std::move(**existing), true};
      return fail(Code::kConflict,
                  fmt::format("a job named '{}' already exists (job {}, {}) with a different "
                              "spec; choose another name",
                              spec.name, (*existing)->id, to_string((*existing)->state)));
    }
  }
  Job job;
  job.spec = std::move(spec);
  job.state = JobState::kPending;
  job.submitted_at_ms = wall_now_ms();
  job.queue_order = ++next_order_;
  auto committed = commit([&]() -> Status {
    auto id = store_.insert_job(job);
    if (!id) return tl::unexpected(id.error());
    job.id = *id;
    std::string job_dir = options_.layout.job_dir(job.id);
    if (auto made = os::make_dirs(job_dir); !made) return made;
    if (!job.spec.script_text.empty()) {
      std::string path = runner::script_snapshot_path(job_dir);
      if (auto written = os::write_file_atomic(path, job.spec.script_text); !written) return written;
      std::filesystem::permissions(path, std::filesystem::perms(0755), ec);
    }
    nlohmann::json data = {{"gpus", job.spec.gpus}, {"priority", job.spec.priority}};
    if (!job.spec.name.empty()) data["name"] = job.spec.name;
    return add_event("job.submitted", job.id, std::nullopt, data);
  });
  if (!committed) return tl::unexpected(committed.error());
  enqueue(job.id, job.spec.priority, job.queue_order, job.spec.gpus);
  request_pass();
  job.reason = "waiting for the scheduler";
  return Submitted{std::move(job), false};
}

Result<Job> Queue::cancel(int64_t job_id) {
  auto job = load_job(job_id, false);
  if (!job) return tl::unexpected(job.error());
  if (is_terminal(job->state)) {
    return fail(Code::kConflict,
                fmt::format("job {} already {}; nothing to cancel", job_id, to_string(job->state)));
  }
  if (job->state == JobState::kRunning) {
    auto live = running_.find(job_id);
    if (live == running_.end()) return fail(Code::kInternal, "running job without a live run");
    Run& run = live->second.run;
    if (run.stop_reason.empty()) {
      auto committed = commit([&]() -> Status {
        if (auto st = store_.set_stop_reason(run.id, "cancel"); !st) return st;
        return add_event("job.cancel_requested", job_id, run.number);
      });
      if (!committed) return tl::unexpected(committed.error());
      run.stop_reason = "cancel";
    }
    // The shim turns SIGTERM into SIGTERM for the group, then SIGKILL after the grace period;
    // the job becomes cancelled when the shim exits.
    if (os::is_same_process(run.shim_pid, run.shim_start_ticks)) ::kill(run.shim_pid, SIGTERM);
    return load_job(job_id, true);
  }
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(*job, JobState::kCancelled, "cancelled by request"); !st) return st;
    return add_event("job.cancelled", job_id, std::nullopt);
  });
  if (!committed) return tl::unexpected(committed.error());
  if (auto key = pending_keys_.find(job_id); key != pending_keys_.end()) {
    pending_.erase(key->second);
    pending_keys_.erase(key);
  }
  request_pass();
  return load_job(job_id, true);
}

void Queue::enqueue(int64_t id, int priority, int64_t order, int gpus) {
  QueueKey key{priority, order, id};
  pending_[key] = gpus;
  pending_keys_[id] = key;
}

void Queue::request_pass() {
  if (pass_requested_) return;
  pass_requested_ = true;
  // Coalesces a burst of submits and exits into one pass.
  boost::asio::post(ioc_, [this] {
    pass_requested_ = false;
    run_pass();
  });
}

void Queue::run_pass() {
  if (stopping_) return;
  sched::Snapshot snapshot;
  snapshot.now_ms = wall_now_ms();
  for (size_t slot = 0; slot < holders_.size(); ++slot) {
    sched::Gpu gpu;
    gpu.slot = static_cast<int>(slot);
    gpu.held_exclusive = holders_[slot].has_value();
    gpu.memory_total_mib = inventory_.resources[slot].memory_total_mib;
    gpu.memory_free_mib = gpu.memory_total_mib - inventory_.resources[slot].memory_used_mib;
    snapshot.gpus.push_back(gpu);
  }
  snapshot.queue.reserve(pending_.size());
  for (const auto& [key, gpus] : pending_) {
    sched::PendingJob job;
    job.id = key.id;
    job.priority = key.priority;
    job.queue_order = key.order;
    job.gpus = gpus;
    snapshot.queue.push_back(std::move(job));
  }
  sched::Decision decision = sched::schedule(snapshot);
  for (const auto& start : decision.starts) start_run(start.job_id, start.slots);
  auto published = std::make_shared<WaitList>();
  published->waits = std::move(decision.waits);
  snapshot.queue.clear();  // the reasons need the machine, not the queue
  published->snapshot = std::move(snapshot);
  std::lock_guard lock(waits_mutex_);
  waits_ = std::move(published);
}

std::shared_ptr<const WaitList> Queue::waits() const {
  std::lock_guard lock(waits_mutex_);
  return waits_;
}

void Queue::stop() {
  stopping_ = true;
  (void)commit([&]() -> Status {
    return add_event("daemon.stopping", std::nullopt, std::nullopt,
                     {{"running", running_.size()}, {"pending", pending_.size()}});
  });
  for (auto& [id, live] : running_) {
    if (live.exit_watch) live.exit_watch->cancel();
  }
}

}  // namespace gpuq::daemon
