// The Queue's core: construction, transactions and events, cancel, and the published reasons.
#include "daemon/queue.h"

#include <csignal>
#include <fmt/format.h>

#include "base/duration.h"
#include "base/time.h"
#include "os/process.h"

namespace gpuq::daemon {

Queue::Queue(boost::asio::io_context& ioc, store::Store& store, gpu::Inventory inventory,
             Config config, QueueOptions options)
    : ioc_(ioc),
      store_(store),
      inventory_(std::move(inventory)),
      config_(std::move(config)),
      options_(std::move(options)),
      checker_(ioc, 2),
      wake_timer_(ioc),
      look_timer_(ioc),
      heartbeat_timer_(ioc),
      holders_(inventory_.resources.size()),
      lane_used_(config_.lanes.size(), 0),
      health_(inventory_.resources.size()),
      foreign_(inventory_.resources.size(), config_.foreign_repeat_ms),
      episodes_(config_.watch.repeat_ms) {}

Queue::~Queue() {
  // Their threads call back into this object: stop them first.
  prober_.reset();
  cleaner_.reset();
}

Status Queue::commit(const std::function<Status()>& fn) {
  events_added_ = false;
  size_t before = uncommitted_kinds_.size();
  auto result = store_.transaction(fn);
  // Events are counted once on record: a rolled-back event never happened.
  if (result) {
    for (const auto& kind : uncommitted_kinds_) metrics_.count_event(kind);
    uncommitted_kinds_.clear();
  } else {
    uncommitted_kinds_.resize(before);
  }
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
  uncommitted_kinds_.push_back(kind);
  return ok();
}

Status Queue::set_state(int64_t job_id, JobState from, JobState to, const std::string& reason) {
  if (!is_legal_transition(from, to)) {
    return fail(Code::kInternal, fmt::format("job {}: illegal transition {} -> {}", job_id,
                                             to_string(from), to_string(to)));
  }
  std::optional<int64_t> finished;
  if (is_terminal(to)) finished = wall_now_ms();
  return store_.set_job_state(job_id, to, reason, finished);
}

Result<Job> Queue::load_job(int64_t id, bool with_runs) {
  auto job = store_.find_job(id, with_runs);
  if (!job) return tl::unexpected(job.error());
  if (!*job) return fail(Code::kNotFound, fmt::format("no job {}", id));
  return std::move(**job);
}

std::optional<JobState> Queue::state_of(int64_t job_id) const {
  if (auto it = active_.find(job_id); it != active_.end()) return it->second.state;
  if (auto it = finished_.find(job_id); it != finished_.end()) return it->second;
  return std::nullopt;
}

void Queue::note_finished(int64_t job_id, JobState state) {
  untrack(job_id);
  finished_[job_id] = state;
  request_pass();  // its dependents may be ready, or blocked, now
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
    // A cancel wins over a timeout already under way: the job must not be retried.
    if (run.stop_reason != "cancel") {
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
    if (auto st = set_state(job_id, job->state, JobState::kCancelled, "cancelled by request"); !st) return st;
    return add_event("job.cancelled", job_id, std::nullopt);
  });
  if (!committed) return tl::unexpected(committed.error());
  note_finished(job_id, JobState::kCancelled);
  return load_job(job_id, true);
}

std::shared_ptr<const WaitList> Queue::waits() const {
  std::lock_guard lock(waits_mutex_);
  return waits_;
}

void Queue::stop() {
  stopping_ = true;
  (void)commit([&]() -> Status {
    return add_event("daemon.stopping", std::nullopt, std::nullopt,
                     {{"running", running_.size()}, {"active", active_.size()}});
  });
  for (auto& [id, live] : running_) {
    if (live.exit_watch) live.exit_watch->cancel();
    if (live.timeout) live.timeout->cancel();
    if (live.yield_deadline) live.yield_deadline->cancel();
  }
  wake_timer_.cancel();
  look_timer_.cancel();
  heartbeat_timer_.cancel();
}

std::string JobWait::render(int64_t now_ms) const {
  switch (kind) {
    case Kind::kNotBefore:
      return fmt::format("not before {} (in {})", format_rfc3339(until_ms),
                         format_duration(Millis(until_ms - now_ms)));
    case Kind::kRetry:
      return fmt::format("retry {}/{} in {}", attempt, retries,
                         format_duration(Millis(std::max<int64_t>(0, until_ms - now_ms))));
    case Kind::kDependency: return dependency.text();
    case Kind::kCondition:
      return fmt::format("{} (for {})", text, format_duration(Millis(now_ms - since_ms)));
    case Kind::kChecking: return "checking its conditions (files, REQUIRES, DONE_IF)";
    case Kind::kHeld: return "held (gpuq release)";
    case Kind::kBlocked: return text;
  }
  return "";
}

std::string WaitList::reason(int64_t job_id, int64_t now_ms) const {
  for (const auto& w : not_ready) {
    if (w.job_id == job_id) return w.render(now_ms);
  }
  for (const auto& w : waits) {
    if (w.job_id == job_id) return w.reason.text(snapshot);
  }
  return "";
}

}  // namespace gpuq::daemon
