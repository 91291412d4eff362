// SPDX-License-Identifier: Apache-2.0
// The Queue's scheduling pass: which pending jobs are ready (readiness.h), which of those the
// scheduler starts, and when the actor must wake up next.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <utility>

#include "base/time.h"
#include "daemon/queue.h"

namespace gpuq::daemon {

void Queue::request_pass() {
  if (pass_requested_ || stopping_) return;
  pass_requested_ = true;
  // Coalesces a burst of submits and exits into one pass.
  world_.post([this] {
    pass_requested_ = false;
    run_pass();
  });
}

void Queue::arm_wake(int64_t at_ms) {
  if (at_ms <= 0) return;
  int64_t now = world_.now_ms();
  if (wake_at_ms_ != 0 && wake_at_ms_ <= at_ms && wake_at_ms_ > now) return;
  wake_at_ms_ = at_ms;
  wake_timer_->arm(at_ms, [this] {
    wake_at_ms_ = 0;
    request_pass();
  });
}

sched::Snapshot Queue::machine_snapshot(int64_t now) const {
  sched::Snapshot snapshot;
  snapshot.now_ms = now;
  snapshot.links = inventory_.links;
  snapshot.draining = draining_;
  snapshot.backfill_unknown_limit_ms = config_.backfill_unknown_limit_ms;
  snapshot.policy = policy_of(config_);
  snapshot.reservations = reservations_;
  // A reservation holds its GPUs only while one of its jobs is unfinished.
  std::vector<bool> reservation_in_use(reservations_.size(), false);
  for (size_t r = 0; r < reservations_.size(); ++r) {
    reservation_in_use[r] = ready_index_.reservation_in_use(static_cast<int>(r));
  }
  for (size_t r = 0; r < reservations_.size(); ++r) {
    if (!reservation_in_use[r]) snapshot.reservations[r].slots.clear();
  }
  for (size_t slot = 0; slot < holders_.size(); ++slot) {
    sched::Gpu gpu;
    gpu.slot = static_cast<int>(slot);
    gpu.memory_total_mib = inventory_.resources[slot].memory_total_mib;
    const GpuHealth& health = health_[slot];
    // Before the first probe, what discovery saw; after it, what processes other than runs use.
    int64_t other_used = health.memory_used_mib < 0 ? inventory_.resources[slot].memory_used_mib
                                                    : health.other_memory_mib;
    gpu.memory_free_mib = std::max<int64_t>(0, gpu.memory_total_mib - other_used);
    gpu.usable = health.attention.is_null() && !foreign_.foreign(static_cast<int>(slot));
    for (int64_t holder : holders_[slot]) {
      auto it = active_.find(holder);
      bool share = it != active_.end() && it->second.share;
      if (share) {
        ++gpu.sharers;
        gpu.memory_free_mib -= it->second.gpu_mem_mib;
      } else {
        gpu.held_exclusive = true;
      }
    }
    for (size_t r = 0; r < reservations_.size(); ++r) {
      if (!reservation_in_use[r]) continue;
      for (int s : reservations_[r].slots) {
        if (s == static_cast<int>(slot)) gpu.reservation = static_cast<int>(r);
      }
    }
    snapshot.gpus.push_back(gpu);
  }
  for (size_t i = 0; i < config_.lanes.size(); ++i) {
    sched::Lane lane;
    lane.name = config_.lanes[i].name;
    lane.capacity = config_.lanes[i].capacity;
    lane.used = lane_used_[i];
    lane.excludes = config_.lanes[i].excludes;
    snapshot.lanes.push_back(std::move(lane));
  }
  for (size_t k = 0; k < array_lanes_.size(); ++k) {  // the caps of arrays (queue_sweep.cc)
    sched::Lane lane;
    lane.name = array_lanes_[k].name;
    lane.capacity = std::max(1, array_lanes_[k].capacity);
    lane.used = lane_used_[config_.lanes.size() + k];
    snapshot.lanes.push_back(std::move(lane));
  }
  for (const auto& [id, live] : runs_->live()) {
    auto it = active_.find(id);
    if (it == active_.end() || live.settling || live.ended) continue;
    sched::RunningJob r;
    r.id = id;
    r.slots = live.slots;
    r.lanes = it->second.lanes;
    int64_t bound = it->second.estimate_ms ? it->second.estimate_ms : it->second.timeout_ms;
    r.expected_end_ms = bound ? saturating_add(live.run.started_at_ms, bound) : 0;
    r.share = it->second.share;
    r.gpu_mem_mib = it->second.gpu_mem_mib;
    r.owner = it->second.owner;
    r.started_at_ms = live.run.started_at_ms;
    snapshot.running.push_back(std::move(r));
  }
  // A pull holds its lanes while it runs (queue_images.cc).
  for (const auto& [id, pull] : pulls_) {
    sched::RunningJob r;
    r.id = id;
    r.lanes = pull.lanes;
    snapshot.running.push_back(std::move(r));
  }
  // A finished run under cleanup holds its GPUs and lanes for a moment more.
  for (const auto& [row, c] : runs_->cleanings()) {
    sched::RunningJob r;
    r.id = c.job_id;
    r.slots = c.slots;
    r.lanes = c.lanes;
    r.expected_end_ms = now + 2 * config_.cleanup_poll_ms;
    // A preempted run's GPUs are still promised to the job that preempted it.
    r.preempted_by = c.preempted_by;
    if (auto it = active_.find(c.job_id); it != active_.end()) r.share = it->second.share;
    snapshot.running.push_back(std::move(r));
  }
  add_preemption_facts(snapshot);
  return snapshot;
}

void Queue::set_wait(JobWait wait) {
  waits_by_job_[wait.job_id] = std::move(wait);
  waits_by_job_changed_ = true;
}

void Queue::forget_wait(int64_t job_id) {
  if (waits_by_job_.erase(job_id) != 0) waits_by_job_changed_ = true;
}

void Queue::evaluate(ActiveJob& job, int64_t now, bool store_ok, PassActions& actions) {
  using K = Readiness::Kind;
  const int64_t id = job.id;
  Readiness r = job_readiness(job, now, [this](int64_t other) { return state_of(other); });
  if (r.kind == K::kReady || r.kind == K::kPull) {
    ready_index_.set_ready(r.kind == K::kPull ? as_pull(job) : job);
    forget_wait(id);
    return;
  }
  ready_index_.set_not_ready(id);
  JobWait w(id, JobWait::Kind::kHeld, r.until_ms);
  switch (r.kind) {
    case K::kNotWaiting:
    case K::kBlocked: forget_wait(id); return;
    // Blocking and unblocking are commits: a failed one is tried again at the next pass.
    case K::kUnblock:
      forget_wait(id);
      actions.to_unblock.push_back(id);
      ready_index_.mark(id);
      return;
    case K::kBlock:
      forget_wait(id);
      actions.to_block.emplace_back(id, r.dependency.text());
      ready_index_.mark(id);
      return;
    case K::kHeld:
      if (auto text = held_reasons_.find(id); text != held_reasons_.end()) w.text = text->second;
      break;
    case K::kCancelling: w.kind = JobWait::Kind::kCancelling; break;
    case K::kNotBefore:
    case K::kRetryDelay:
      w.kind = r.kind == K::kRetryDelay ? JobWait::Kind::kRetry : JobWait::Kind::kNotBefore;
      w.attempt = job.failed_runs;
      w.retries = job.retries;
      ready_index_.wake_at(id, r.until_ms);
      break;
    case K::kStartRetry:
      w.kind = JobWait::Kind::kStartRetry;
      if (auto e = start_errors_.find(id); e != start_errors_.end()) w.text = e->second;
      ready_index_.wake_at(id, r.until_ms);
      break;
    case K::kDependency:
      w.kind = JobWait::Kind::kDependency;
      w.dependency = r.dependency;
      break;
    case K::kCheck:
    case K::kChecking:
    case K::kConditionFalse: {
      if (r.kind == K::kCheck) {
        // check_conditions() marks the job; while the store fails it waits for the next pass.
        if (store_ok) actions.to_check.push_back(id);
        else ready_index_.mark(id);
      }
      if (r.kind == K::kConditionFalse) ready_index_.wake_at(id, r.until_ms);
      bool is_false = r.kind == K::kConditionFalse ||
                      (r.kind == K::kCheck && job.conditions == ConditionState::kFalse);
      w.kind = is_false ? JobWait::Kind::kCondition : JobWait::Kind::kChecking;
      w.until_ms = 0;
      if (!job.rare->conditions_false_text.empty()) w.text = job.rare->conditions_false_text;
      w.since_ms = job.rare->conditions_false_since_ms;
      break;
    }
    case K::kCheckImages:
    case K::kImagesWait:
      if (r.kind == K::kCheckImages) {
        if (store_ok) actions.to_check_images.push_back(id);
        else ready_index_.mark(id);
      }
      w.kind = JobWait::Kind::kImages;
      if (auto text = image_texts_.find(id); text != image_texts_.end()) w.text = text->second;
      else w.text = "checking whether its images are present";
      break;
    case K::kPull:
    case K::kReady: break;
  }
  set_wait(std::move(w));
}

void Queue::run_pass() {
  if (stopping_) return;
  auto pass_started = std::chrono::steady_clock::now();
  int64_t now = world_.now_ms();
  auto published = std::make_shared<WaitList>();
  sched::Snapshot snapshot = machine_snapshot(now);
  // Each user's usage (running jobs so far included) and limits, for fair share and limits.
  users_.observe_running(snapshot.running, now);
  snapshot.owners = users_.owners(now);
  snapshot.fair_share = users_.settings().fair_share;
  // While the store fails nothing starts and nothing is checked (both would only produce
  // changes that cannot be recorded); the retry timer passes again.
  bool store_ok = !trouble_;
  // Only the jobs whose inputs changed since the last pass, or whose time has come, are
  // evaluated again; every other job keeps its place among the ready ones, or its wait.
  PassActions actions;
  for (int64_t id : ready_index_.take(now)) {
    auto it = active_.find(id);
    if (it == active_.end()) {
      ready_index_.set_not_ready(id);
      forget_wait(id);
      continue;
    }
    evaluate(it->second, now, store_ok, actions);
  }
  bool changed = false;
  for (const auto& [id, why] : actions.to_block) changed = block(id, why) || changed;
  for (int64_t id : actions.to_unblock) changed = unblock(id) || changed;
  if (changed) request_pass();  // the cascade continues
  for (int64_t id : actions.to_check) check_conditions(active_.at(id));
  for (int64_t id : actions.to_check_images) check_images(active_.at(id));

  snapshot.queue = ready_index_.lend_queue();
  snapshot.queue_in_priority_order = true;
  snapshot.queue_has_one_owner = ready_index_.lent_queue_has_one_owner();
  sched::Decision buffers;
  buffers.waits = take_spare_waits();
  sched::Decision decision = sched::schedule_reusing(snapshot, std::move(buffers));
  if (store_ok) {
    auto starts_began = std::chrono::steady_clock::now();
    std::vector<sched::Start> starts;
    for (const auto& start : decision.starts) {
      ActiveJob& job = active_.at(start.job_id);
      if (job.images == ImageState::kToPull) {  // scheduled as its image's pull
        begin_pull(job);
        continue;
      }
      // DONE_IF (and REQUIRES) are checked again before a start when their last check is old:
      // the job may have waited long for a GPU, and its work may be done by now.
      if (conditions_stale(job, now, config_.requires_poll_ms)) {
        check_conditions(job);
        continue;
      }
      starts.push_back(start);
    }
    runs_->start(starts);
    for (const auto& start : starts) {  // charged from now, even if it ends before the next pass
      auto live = runs_->live().find(start.job_id);
      auto job = active_.find(start.job_id);
      if (live == runs_->live().end() || job == active_.end()) continue;
      users_.note_started(start.job_id, job->second.owner,
                          static_cast<int>(live->second.slots.size()), live->second.run.started_at_ms);
    }
    reconcile_preemptions();
    apply_preemptions(snapshot, decision);
    published->starts_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - starts_began)
                               .count();
  }
  ready_index_.return_queue(std::move(snapshot.queue));
  if (int64_t wake = ready_index_.next_wake_ms()) arm_wake(wake);
  publish(std::move(published), std::move(snapshot), std::move(decision), pass_started);
}

void Queue::publish(std::shared_ptr<WaitList> published, sched::Snapshot snapshot,
                    sched::Decision decision, std::chrono::steady_clock::time_point started) {
  published->waits = std::move(decision.waits);
  snapshot.queue.clear();  // lent back to the ready index; the reasons need the machine only
  if (waits_by_job_changed_) {
    auto items = std::make_shared<std::vector<JobWait>>();
    items->reserve(waits_by_job_.size());
    for (const auto& [id, wait] : waits_by_job_) items->push_back(wait);
    published_not_ready_.items = std::move(items);
    waits_by_job_changed_ = false;
  }
  published->not_ready = published_not_ready_;
  published->snapshot = std::move(snapshot);
  published->draining = draining_;
  for (size_t i = 0; i < config_.lanes.size(); ++i) {
    std::vector<int64_t> holders;
    for (const auto& [id, live] : runs_->live()) {
      auto it = active_.find(id);
      if (it != active_.end() &&
          std::find(it->second.lanes.begin(), it->second.lanes.end(), static_cast<int>(i)) != it->second.lanes.end()) {
        holders.push_back(id);
      }
    }
    for (const auto& [id, pull] : pulls_) {  // a container job pulling its image (queue_images.cc)
      if (std::find(pull.lanes.begin(), pull.lanes.end(), static_cast<int>(i)) != pull.lanes.end()) {
        holders.push_back(id);
      }
    }
    published->lane_holders.emplace_back(config_.lanes[i].name, std::move(holders));
  }
  published->active_jobs = active_.size();
  published->gpus = health_;
  for (size_t slot = 0; slot < health_.size(); ++slot) {
    published->gpus[slot].foreign = foreign_.detail(static_cast<int>(slot));
  }
  for (const auto& [id, live] : runs_->live()) {
    if (live.run.preempted_by == 0) continue;
    for (int slot : live.slots) published->gpus[slot].preempting_for = live.run.preempted_by;
  }
  published->pass = ++passes_;
  published->pass_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - started)
                           .count();
  recycling_ = std::exchange(last_published_, published);
  {
    std::lock_guard lock(waits_mutex_);
    waits_ = std::move(published);
  }
  if (trim_after_pass_) {
    trim_after_pass_ = false;
    ::malloc_trim(0);
  }
}

std::vector<sched::Wait> Queue::take_spare_waits() {
  // The list before the last one is no longer reachable through waits_: once no reader holds
  // it either, no one can take it any more, and its vector is ours to write again.
  std::vector<sched::Wait> spare;
  if (recycling_ && recycling_.use_count() == 1) {
    // use_count() reads relaxed: the fence orders the last reader's reads before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    spare = std::move(recycling_->waits);
  }
  recycling_.reset();
  return spare;
}

void Queue::check_conditions(ActiveJob& job) {
  ready_index_.mark(job.id);  // checking, or (the job could not be read) to be checked again
  auto loaded = load_job(job.id, false);
  if (!loaded) return;
  ConditionRequest request;
  request.job_id = job.id;
  request.cwd = loaded->spec.cwd;
  request.env = loaded->spec.env;
  for (const auto& d : loaded->spec.deps) {
    if (d.kind == Dependency::Kind::kFile) request.files.push_back(d.target);
    if (d.kind == Dependency::Kind::kRequires) request.shell_tests.push_back(d.target);
  }
  request.done_if = loaded->spec.done_if;
  request.timeout = Millis(config_.requires_timeout_ms);
  job.conditions = ConditionState::kChecking;
  world_.check_conditions(std::move(request), [this](ConditionResult result) { on_conditions(result); });
}

void Queue::on_conditions(const ConditionResult& result) {
  auto it = active_.find(result.job_id);
  if (it == active_.end() || stopping_) return;
  ActiveJob& job = it->second;
  int64_t now = world_.now_ms();
  ready_index_.mark(job.id);  // whatever the answer, its readiness is decided again
  if (job.state != JobState::kPending || job.cancel_requested) {
    job.conditions = ConditionState::kUnknown;  // checked again if it becomes pending
    return;
  }
  if (result.holds && result.done) {
    // DONE_IF already true: the work is done; nothing runs.
    auto committed = commit([&]() -> Status {
      if (auto st = set_state(job.id, JobState::kPending, JobState::kSkipped, "already done: DONE_IF held before a start"); !st) return st;
      return add_event("job.skipped", job.id, std::nullopt, {{"reason", "done_if"}});
    });
    if (committed) {
      note_finished(job.id, JobState::kSkipped);
    } else {
      job.conditions = ConditionState::kUnknown;  // checked again once the store works
    }
    return;
  }
  RareJobFields& rare = job.rare.edit();
  rare.conditions_checked_ms = now;
  if (result.holds) {
    if (rare.conditions_false_since_ms != 0) {
      auto committed = commit([&] { return store_.set_conditions_false_since(job.id, 0); });
      if (!committed) {
        job.conditions = ConditionState::kUnknown;
        return;
      }
      rare.conditions_false_since_ms = 0;
    }
    job.conditions = ConditionState::kTrue;
    rare.conditions_false_text.clear();
  } else {
    if (rare.conditions_false_since_ms == 0) {
      // Kept in the store: a restart must not start job.requires_wait's count afresh.
      if (commit([&] { return store_.set_conditions_false_since(job.id, now); })) {
        rare.conditions_false_since_ms = now;
      }
    }
    job.conditions = ConditionState::kFalse;
    rare.conditions_false_text = result.false_text;
    // Back off: check again soon at first, then less and less often.
    rare.check_interval_ms = rare.check_interval_ms == 0
                                 ? config_.requires_poll_ms
                                 : std::min(rare.check_interval_ms * 2, config_.requires_poll_max_ms);
    rare.next_check_ms = now + rare.check_interval_ms;
  }
  request_pass();
}

bool Queue::block(int64_t job_id, const std::string& why) {
  auto it = active_.find(job_id);
  if (it == active_.end()) return false;
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(job_id, JobState::kPending, JobState::kBlocked, why); !st) return st;
    return add_event("job.blocked", job_id, std::nullopt, {{"cause", why}});
  });
  if (!committed) return false;
  it->second.state = JobState::kBlocked;
  return true;
}

bool Queue::unblock(int64_t job_id) {
  auto it = active_.find(job_id);
  if (it == active_.end()) return false;
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(job_id, JobState::kBlocked, JobState::kPending, ""); !st) return st;
    return add_event("job.unblocked", job_id, std::nullopt);
  });
  if (!committed) return false;
  it->second.state = JobState::kPending;
  return true;
}

std::vector<std::string> Queue::readiness_differences() const {
  using K = Readiness::Kind;
  std::vector<std::string> out;
  int64_t now = world_.now_ms();
  auto lookup = [this](int64_t id) { return state_of(id); };
  for (const auto& [id, job] : active_) {
    if (ready_index_.due(id, now)) continue;
    Readiness r = job_readiness(job, now, lookup);
    bool ready = ready_index_.ready_as(job);
    bool ready_afresh = r.kind == K::kReady || r.kind == K::kPull;  // a pull is scheduled too
    if (ready_afresh != ready) {
      out.push_back(fmt::format("job {}: {} in the index, {} afresh", id, ready ? "ready" : "not ready",
                                ready_afresh ? "ready" : "not ready"));
      continue;
    }
    std::optional<JobWait::Kind> wait;
    switch (r.kind) {
      case K::kHeld: wait = JobWait::Kind::kHeld; break;
      case K::kCancelling: wait = JobWait::Kind::kCancelling; break;
      case K::kNotBefore: wait = JobWait::Kind::kNotBefore; break;
      case K::kRetryDelay: wait = JobWait::Kind::kRetry; break;
      case K::kStartRetry: wait = JobWait::Kind::kStartRetry; break;
      case K::kDependency: wait = JobWait::Kind::kDependency; break;
      case K::kChecking: wait = JobWait::Kind::kChecking; break;
      case K::kConditionFalse: wait = JobWait::Kind::kCondition; break;
      case K::kCheckImages:
      case K::kImagesWait: wait = JobWait::Kind::kImages; break;
      case K::kCheck:
        wait = job.conditions == ConditionState::kFalse ? JobWait::Kind::kCondition : JobWait::Kind::kChecking;
        break;
      default: break;
    }
    auto recorded = waits_by_job_.find(id);
    if (!wait) {
      if (recorded != waits_by_job_.end()) out.push_back(fmt::format("job {}: a wait recorded, none afresh", id));
      continue;
    }
    if (recorded == waits_by_job_.end()) {
      out.push_back(fmt::format("job {}: no wait recorded", id));
      continue;
    }
    const JobWait& w = recorded->second;
    bool timed = *wait == JobWait::Kind::kNotBefore || *wait == JobWait::Kind::kRetry ||
                 *wait == JobWait::Kind::kStartRetry;
    if (w.kind != *wait || (timed && w.until_ms != r.until_ms) ||
        w.dependency.text() != r.dependency.text()) {
      out.push_back(fmt::format("job {}: recorded wait \"{}\", afresh kind {} until {} ({})", id,
                                w.render(now), static_cast<int>(*wait), r.until_ms, r.dependency.text()));
    }
  }
  return out;
}

}  // namespace gpuq::daemon
