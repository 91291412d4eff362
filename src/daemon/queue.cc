// SPDX-License-Identifier: Apache-2.0
// The Queue's core: construction, transactions and events, failed writes and their retries,
// cancel, and the published reasons.
#include "daemon/queue.h"

#include <cstdio>
#include <fmt/format.h>

#include "base/duration.h"
#include "base/time.h"

namespace gpuq::daemon {
namespace {

// The retry timer's backoff while commits fail: 100 ms, doubling, at most 10 s.
constexpr int64_t kStoreRetryFirstMs = 100;
constexpr int64_t kStoreRetryMaxMs = 10'000;
// How long commit_later()'s writes wait for a commit to ride in before they are committed alone.
constexpr int64_t kLaterWritesWithinMs = 1'000;

}  // namespace

Queue::Queue(World& world, store::Store& store, gpu::Inventory inventory, Config config,
             QueueOptions options)
    : world_(world),
      store_(store),
      inventory_(std::move(inventory)),
      config_(std::move(config)),
      options_(std::move(options)),
      wake_timer_(world.make_timer()),
      look_timer_(world.make_timer()),
      heartbeat_timer_(world.make_timer()),
      store_retry_timer_(world.make_timer()),
      gc_timer_(world.make_timer()),
      later_timer_(world.make_timer()),
      holders_(inventory_.resources.size()),
      lane_used_(config_.lanes.size(), 0),
      health_(inventory_.resources.size()),
      readings_(inventory_.resources.size()),
      foreign_(inventory_.resources.size(), config_.foreign_repeat_ms),
      episodes_(config_.watch.repeat_ms),
      runs_(make_lifecycle()) {
  users_.configure(config_.users);
}

Queue::~Queue() = default;

Status Queue::commit(const std::function<Status()>& fn) {
  events_added_ = false;
  size_t kinds_before = uncommitted_kinds_.size();
  int64_t seq_before = last_seq_;
  std::optional<StoreTrouble> trouble = trouble_;
  auto body = [&]() -> Status {
    if (trouble) {
      // The first commit that works after failures says what happened, in the same
      // transaction as the change it carries.
      auto st = add_event("daemon.store_error", std::nullopt, std::nullopt,
                          {{"since", format_rfc3339(trouble->since_ms)},
                           {"until", format_rfc3339(world_.now_ms())},
                           {"failed_commits", trouble->failures},
                           {"error", trouble->error},
                           {"effect", "no run started and no change was recorded meanwhile; "
                                      "what had happened was recorded once the store worked"}});
      if (!st) return st;
    }
    return fn();
  };
  // The kept writes of commit_later() go first, in the same transaction.
  bool later_failed = false;
  auto with_later = [&](bool later) {
    return world_.commit([&]() -> Status {
      if (later) {
        for (const auto& writes : later_writes_) {
          if (auto st = writes(); !st) {
            later_failed = true;
            return st;
          }
        }
      }
      return body();
    });
  };
  bool later = !later_writes_.empty();
  auto result = with_later(later);
  if (!result && later_failed) {
    // The kept writes must not make `fn` fail: it is tried alone, they stay kept.
    uncommitted_kinds_.resize(kinds_before);
    last_seq_ = seq_before;
    events_added_ = false;
    later = false;
    result = with_later(false);
  }
  if (result && later) later_writes_.clear();
  // Events are counted once on record: a rolled-back event never happened.
  if (!result) {
    uncommitted_kinds_.resize(kinds_before);
    last_seq_ = seq_before;
    note_store_failure(result.error());
    return result;
  }
  for (const auto& kind : uncommitted_kinds_) metrics_.count_event(kind);
  uncommitted_kinds_.clear();
  if (trouble_) {
    std::fprintf(stderr, "gpuq daemon: the store works again after %d failed commit(s)\n",
                 trouble_->failures);
    trouble_.reset();
    store_retry_round_ = 0;
    publish_trouble();
    store_retry_timer_->arm(world_.now_ms(), [this] { retry_kept(); });  // the rest, at once
  }
  if (events_added_ && listener_) listener_(last_seq_);
  return result;
}

void Queue::commit_later(std::function<Status()> writes) {
  later_writes_.push_back(std::move(writes));
  if (later_flush_posted_) return;
  later_flush_posted_ = true;
  later_timer_->arm(world_.now_ms() + kLaterWritesWithinMs, [this] { flush_later_writes(); });
}

void Queue::flush_later_writes() {
  later_flush_posted_ = false;
  if (later_writes_.empty() || stopping_) return;
  // Kept after the commit when they failed alone (commit() then committed without them).
  if (!commit([] { return ok(); }) || !later_writes_.empty()) {
    retry_later("later-writes", [this] { flush_later_writes(); });
  }
}

void Queue::note_store_failure(const Error& error) {
  if (!trouble_) {
    trouble_ = StoreTrouble{world_.now_ms(), 0, ""};
    std::fprintf(stderr, "gpuq daemon: a commit to the store failed: %s; retrying with backoff\n",
                 error.message.c_str());
  }
  ++trouble_->failures;
  trouble_->error = error.message;
  publish_trouble();
  arm_store_retry();
}

void Queue::publish_trouble() {
  std::lock_guard lock(waits_mutex_);
  published_trouble_ = trouble_;
}

std::optional<StoreTrouble> Queue::store_trouble() const {
  std::lock_guard lock(waits_mutex_);
  return published_trouble_;
}

void Queue::retry_later(const std::string& key, std::function<void()> attempt) {
  kept_[key] = std::move(attempt);
  if (!trouble_) arm_store_retry();  // failed for another reason than the store: try again
}

void Queue::arm_store_retry() {
  if (stopping_) return;
  int64_t delay = kStoreRetryFirstMs << std::min(store_retry_round_, 10);
  store_retry_timer_->arm(world_.now_ms() + std::min(delay, kStoreRetryMaxMs), [this] {
    ++store_retry_round_;
    retry_kept();
  });
}

void Queue::retry_kept() {
  if (stopping_) return;
  // Each attempt keeps itself again (retry_later) if it fails once more.
  auto attempts = std::move(kept_);
  kept_.clear();
  for (auto& [key, attempt] : attempts) attempt();
  // Nothing of ours was waiting: a heartbeat tells whether the store works again.
  if (attempts.empty() && trouble_) beat();
  if (kept_.empty() && !trouble_) store_retry_round_ = 0;
  request_pass();
}

Status Queue::add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                        nlohmann::json data) {
  Event event;
  event.time_ms = world_.now_ms();
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
  // The job and its dependents are decided again by the next pass (which runs after this
  // change reaches memory, or finds it did not).
  ready_index_.mark(job_id);
  std::optional<int64_t> finished;
  if (is_terminal(to)) finished = world_.now_ms();
  if (auto st = store_.set_job_state(job_id, to, reason, finished); !st || !finished) return st;
  auto active = active_.find(job_id);
  if (active == active_.end() || active->second.array_id == 0) return ok();
  return note_element_finished(active->second.array_id);
}

Error Queue::unavailable(const Error& error) const {
  if (error.code != Code::kIoError) return error;
  return Error{Code::kUnavailable,
               fmt::format("the daemon's store cannot be written now ({}); nothing was changed — "
                           "try again once the disk has space again (gpuq check says when)",
                           error.message)};
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

Result<Cancelled> Queue::cancel(int64_t job_id) {
  auto job = load_job(job_id, false);
  if (!job) return tl::unexpected(job.error());
  if (is_terminal(job->state)) {
    return fail(Code::kConflict,
                fmt::format("job {} already {}; nothing to cancel", job_id, to_string(job->state)));
  }
  if (job->state == JobState::kRunning) {
    if (!runs_->find(job_id)) return fail(Code::kInternal, "running job without a live run");
    bool recorded = runs_->cancel(job_id, nlohmann::json::object());
    auto now = load_job(job_id, true);
    if (!now) return tl::unexpected(now.error());
    return Cancelled{std::move(*now), recorded};
  }
  auto active = active_.find(job_id);
  if (active == active_.end()) return fail(Code::kInternal, "waiting job not tracked");
  active->second.cancel_requested = true;  // starts no more, whatever the store says
  ready_index_.mark(job_id);
  record_cancel(job_id);
  auto now = load_job(job_id, true);
  if (!now) return tl::unexpected(now.error());
  return Cancelled{std::move(*now), !active_.count(job_id)};
}

void Queue::record_cancel(int64_t job_id) {
  auto active = active_.find(job_id);
  if (active == active_.end() || !active->second.cancel_requested) return;
  JobState from = active->second.state;
  if (from == JobState::kRunning) return;  // it started before the cancel: the lifecycle's business
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(job_id, from, JobState::kCancelled, "cancelled by request"); !st) return st;
    return add_event("job.cancelled", job_id, std::nullopt);
  });
  if (!committed) {
    retry_later(fmt::format("cancel:{}", job_id), [this, job_id] { record_cancel(job_id); });
    request_pass();  // its reason says so now
    return;
  }
  note_finished(job_id, JobState::kCancelled);
}

std::shared_ptr<const WaitList> Queue::waits() const {
  std::lock_guard lock(waits_mutex_);
  return waits_;
}

void Queue::stop() {
  (void)commit([&]() -> Status {
    return add_event("daemon.stopping", std::nullopt, std::nullopt,
                     {{"running", runs_->live().size()}, {"active", active_.size()}});
  });
  stopping_ = true;
  runs_->stop();  // the shims run on
  wake_timer_->cancel();
  look_timer_->cancel();
  heartbeat_timer_->cancel();
  store_retry_timer_->cancel();
  gc_timer_->cancel();
  later_timer_->cancel();
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
    case Kind::kHeld: return text.empty() ? "held (gpuq release)" : text;
    case Kind::kBlocked: return text;
    case Kind::kStartRetry:
      return fmt::format("could not start: {}; trying again in {}", text,
                         format_duration(Millis(std::max<int64_t>(0, until_ms - now_ms))));
    case Kind::kCancelling:
      return "cancelled; the cancel waits for the store to work again before it is recorded";
    case Kind::kImages: return text;
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
