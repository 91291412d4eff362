// SPDX-License-Identifier: Apache-2.0
// The Queue's controls: hold, release, retry, move, drain.
#include <fmt/format.h>

#include "base/time.h"
#include "daemon/queue.h"
#include "daemon/readiness.h"

namespace gpuq::daemon {

Result<Job> Queue::hold(int64_t job_id) {
  auto job = load_job(job_id, false);
  if (!job) return tl::unexpected(job.error());
  if (job->state == JobState::kHeld) return load_job(job_id, true);
  if (job->state != JobState::kPending) {
    return fail(Code::kConflict, fmt::format("job {} is {}; only a pending job can be held", job_id,
                                             to_string(job->state)));
  }
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(job_id, JobState::kPending, JobState::kHeld, kHeldByRequest); !st) return st;
    return add_event("job.held", job_id, std::nullopt);
  });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  active_[job_id].state = JobState::kHeld;
  request_pass();
  return load_job(job_id, true);
}

Result<Job> Queue::release(int64_t job_id) {
  auto job = load_job(job_id, false);
  if (!job) return tl::unexpected(job.error());
  if (job->state != JobState::kHeld) {
    return fail(Code::kConflict, fmt::format("job {} is {}, not held", job_id, to_string(job->state)));
  }
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(job_id, JobState::kHeld, JobState::kPending, ""); !st) return st;
    return add_event("job.released", job_id, std::nullopt);
  });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  active_[job_id].state = JobState::kPending;
  held_reasons_.erase(job_id);
  request_pass();
  return load_job(job_id, true);
}

Result<Job> Queue::retry(int64_t job_id, bool from_start) {
  auto job = load_job(job_id, true);
  if (!job) return tl::unexpected(job.error());
  JobState from = job->state;
  if (from == JobState::kBlocked) {
    auto it = active_.find(job_id);
    if (it != active_.end()) {
      auto verdict = evaluate_job_dependencies(it->second, [this](int64_t id) { return state_of(id); });
      if (verdict.kind == DependencyVerdict::Kind::kImpossible) {
        return fail(Code::kConflict, fmt::format("job {} stays blocked: {}", job_id, verdict.text()));
      }
    }
  } else if (from != JobState::kFailed && from != JobState::kCancelled) {
    return fail(Code::kConflict,
                fmt::format("job {} is {}; retry applies to failed, cancelled or blocked jobs{}", job_id,
                            to_string(from),
                            from == JobState::kSucceeded ? " (submit it again to rerun it)" : ""));
  }
  int retry_base = job->runs.empty() ? 0 : job->runs.back().number;
  auto committed = commit([&]() -> Status {
    if (auto st = set_state(job_id, from, JobState::kPending, ""); !st) return st;
    if (auto st = store_.set_retry_at(job_id, 0); !st) return st;
    if (auto st = store_.set_retry_base(job_id, retry_base); !st) return st;
    nlohmann::json data = {{"from", to_string(from)}};
    if (!job->spec.steps.empty()) {
      if (auto st = store_.set_steps_from_start(job_id, from_start); !st) return st;
      data["from_start"] = from_start;
    }
    return add_event("job.retried", job_id, std::nullopt, data);
  });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  job->state = JobState::kPending;
  job->retry_at_ms = 0;
  job->retry_base = retry_base;  // a person asked for it: the retry budget starts afresh
  auto active = make_active(job_id, *job);
  if (!active) return tl::unexpected(active.error());
  track(std::move(*active));
  unblock_now();
  request_pass();
  return load_job(job_id, true);
}

void Queue::unblock_now() {
  int64_t now = world_.now_ms();
  auto lookup = [this](int64_t id) { return state_of(id); };
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int64_t> ready;
    for (const auto& [id, job] : active_) {
      if (job.state != JobState::kBlocked) continue;
      if (job_readiness(job, now, lookup).kind == Readiness::Kind::kUnblock) ready.push_back(id);
    }
    // One that cannot be recorded now is unblocked by a later pass.
    for (int64_t id : ready) changed = unblock(id) || changed;
  }
}

Result<Job> Queue::move(int64_t job_id, const MoveRequest& request) {
  auto it = active_.find(job_id);
  if (it == active_.end()) {  // finished, or no such job (404)
    auto finished = load_job(job_id, false);
    if (!finished) return tl::unexpected(finished.error());
  }
  if (it == active_.end() || (it->second.state != JobState::kPending && it->second.state != JobState::kHeld &&
                              it->second.state != JobState::kBlocked)) {
    return fail(Code::kConflict, fmt::format("job {} is not waiting; only waiting jobs can be moved", job_id));
  }
  ActiveJob& job = it->second;
  // The waiting jobs in queue order, to find neighbours.
  std::vector<const ActiveJob*> order;
  for (const auto& [id, a] : active_) {
    if (a.state != JobState::kRunning && id != job_id) order.push_back(&a);
  }
  auto before = [](const ActiveJob* a, const ActiveJob* b) {
    if (a->priority != b->priority) return a->priority < b->priority;
    return a->queue_order != b->queue_order ? a->queue_order < b->queue_order : a->id < b->id;
  };
  std::sort(order.begin(), order.end(), before);
  // Where it was, for an undo (job.moved's from_*): its key and the job it followed.
  nlohmann::json from_after = nullptr;
  for (const auto* a : order) {
    if (before(a, &job)) from_after = a->id;
  }
  nlohmann::json moved = {{"from_priority", job.priority}, {"from_queue_order", job.queue_order},
                          {"from_after", from_after}};
  int priority = job.priority;
  int64_t queue_order = job.queue_order;
  using W = MoveRequest::Where;
  if (request.where == W::kPriority) {
    priority = request.priority;
  } else if (request.where == W::kTop || request.where == W::kBottom) {
    if (!order.empty()) {
      const ActiveJob* edge = request.where == W::kTop ? order.front() : order.back();
      priority = request.where == W::kTop ? std::min(priority, edge->priority) : std::max(priority, edge->priority);
      int64_t extreme = edge->queue_order;
      for (const auto* a : order) {
        extreme = request.where == W::kTop ? std::min(extreme, a->queue_order) : std::max(extreme, a->queue_order);
      }
      queue_order = request.where == W::kTop ? extreme - kOrderStep : extreme + kOrderStep;
    }
  } else {
    auto other = active_.find(request.other);
    if (other == active_.end() || other->second.state == JobState::kRunning) {
      return fail(Code::kNotFound, fmt::format("job {} is not waiting; move relative to a waiting job", request.other));
    }
    priority = other->second.priority;
    auto pos = std::find(order.begin(), order.end(), &other->second) - order.begin();
    // The neighbour on the other side, within the same priority.
    int64_t neighbour_index = request.where == W::kBefore ? pos - 1 : pos + 1;
    int64_t bound = request.where == W::kBefore ? other->second.queue_order - 2 * kOrderStep
                                                : other->second.queue_order + 2 * kOrderStep;
    if (neighbour_index >= 0 && neighbour_index < static_cast<int64_t>(order.size()) &&
        order[neighbour_index]->priority == priority) {
      bound = order[neighbour_index]->queue_order;
    }
    queue_order = (other->second.queue_order + bound) / 2;
    if (queue_order == other->second.queue_order || queue_order == bound) {
      // No room between them: spread every waiting job's order key out again.
      // Memory changes only once the store has them.
      auto committed = commit([&]() -> Status {
        int64_t next = 0;
        for (const auto* a : order) {
          next += kOrderStep;
          if (auto st = store_.set_queue_position(a->id, a->priority, next); !st) return st;
        }
        return ok();
      });
      if (!committed) return tl::unexpected(unavailable(committed.error()));
      int64_t next = 0;
      for (const auto* a : order) {
        next += kOrderStep;
        active_.at(a->id).queue_order = next;
        ready_index_.mark(a->id);
      }
      next_order_ = std::max(next_order_, next);
      return move(job_id, request);
    }
  }
  auto committed = commit([&]() -> Status {
    if (auto st = store_.set_queue_position(job_id, priority, queue_order); !st) return st;
    moved["priority"] = priority;
    moved["queue_order"] = queue_order;
    return add_event("job.moved", job_id, std::nullopt, moved);
  });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  job.priority = priority;
  job.queue_order = queue_order;
  ready_index_.mark(job_id);  // it takes its new place among the ready jobs
  request_pass();
  return load_job(job_id, true);
}

Result<bool> Queue::set_draining(bool draining) {
  if (draining_ == draining) return draining_;
  auto committed = commit([&]() -> Status {
    if (auto st = store_.set_meta("draining", draining ? "1" : "0"); !st) return st;
    return add_event(draining ? "queue.drained" : "queue.undrained", std::nullopt, std::nullopt);
  });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  draining_ = draining;
  request_pass();
  return draining_;
}

int Queue::spare_gpus() const {
  if (draining_) return 0;  // it starts nothing
  int spare = 0;
  for (size_t slot = 0; slot < holders_.size(); ++slot) {
    const GpuHealth& health = health_[slot];
    bool usable = holders_[slot].empty() && !health.cleaning && health.attention.is_null() &&
                  health.foreign.is_null();
    spare += usable;
  }
  for (const auto& [id, job] : active_) {
    if (job.state == JobState::kPending) spare -= job.gpus;
  }
  return std::max(spare, 0);
}

Status Queue::record_event(const std::string& kind, std::optional<int64_t> job, nlohmann::json data) {
  return commit([&] { return add_event(kind, job, std::nullopt, std::move(data)); });
}

}  // namespace gpuq::daemon
