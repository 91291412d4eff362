// SPDX-License-Identifier: Apache-2.0
// `gpuq move NAME` for an array or grid: its waiting elements move as one block, in one
// transaction, keeping their order among themselves (docs/sweeps.md).
#include <algorithm>

#include <fmt/format.h>

#include "daemon/queue.h"

namespace gpuq::daemon {
namespace {

bool serves_before(const ActiveJob* a, const ActiveJob* b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  return a->queue_order != b->queue_order ? a->queue_order < b->queue_order : a->id < b->id;
}

struct Position {
  int priority = 0;
  int64_t queue_order = 0;
};

}  // namespace

Result<std::vector<int64_t>> Queue::move_array(int64_t array_id, const MoveRequest& request) {
  using W = MoveRequest::Where;
  std::vector<const ActiveJob*> elements;  // the array's waiting elements
  std::vector<const ActiveJob*> others;    // every other waiting job
  for (const auto& [id, job] : active_) {
    if (job.state == JobState::kRunning) continue;
    (job.array_id == array_id ? elements : others).push_back(&job);
  }
  if (elements.empty()) {
    return fail(Code::kConflict, fmt::format("array {} has no waiting element to move", array_id));
  }
  std::sort(elements.begin(), elements.end(), serves_before);
  std::sort(others.begin(), others.end(), serves_before);
  auto [lowest, highest] = std::minmax_element(elements.begin(), elements.end(),
                                               [](auto* a, auto* b) { return a->priority < b->priority; });
  // Each element's new place; for before/after, every waiting job is numbered again in the
  // new order (as a single move does when there is no room left between two jobs).
  std::vector<std::pair<const ActiveJob*, Position>> placed;
  if (request.where == W::kPriority) {
    for (const auto* e : elements) placed.push_back({e, {request.priority, e->queue_order}});
  } else if (request.where == W::kTop || request.where == W::kBottom) {
    bool top = request.where == W::kTop;
    int priority = top ? (*lowest)->priority : (*highest)->priority;
    int64_t edge = top ? elements.front()->queue_order : elements.back()->queue_order;
    for (const auto* a : others) {
      priority = top ? std::min(priority, a->priority) : std::max(priority, a->priority);
      edge = top ? std::min(edge, a->queue_order) : std::max(edge, a->queue_order);
    }
    int64_t n = static_cast<int64_t>(elements.size());
    for (int64_t k = 0; k < n; ++k) {
      int64_t order = top ? edge - (n - k) * kOrderStep : edge + (k + 1) * kOrderStep;
      placed.push_back({elements[k], {priority, order}});
    }
  } else {
    auto other = std::find_if(others.begin(), others.end(),
                              [&](const ActiveJob* a) { return a->id == request.other; });
    if (other == others.end()) {
      return fail(Code::kNotFound,
                  fmt::format("job {} is not waiting, or is an element of this array; move the "
                              "array relative to another waiting job",
                              request.other));
    }
    int priority = (*other)->priority;
    auto at = other + (request.where == W::kAfter ? 1 : 0);
    std::vector<const ActiveJob*> sequence(others.begin(), at);
    sequence.insert(sequence.end(), elements.begin(), elements.end());
    sequence.insert(sequence.end(), at, others.end());
    int64_t next = 0;
    for (const auto* a : sequence) {
      next += kOrderStep;
      bool element = a->array_id == array_id;
      placed.push_back({a, {element ? priority : a->priority, next}});
    }
  }
  std::vector<int64_t> moved;
  auto committed = commit([&]() -> Status {
    for (const auto& [job, to] : placed) {
      if (job->priority == to.priority && job->queue_order == to.queue_order) continue;
      if (auto st = store_.set_queue_position(job->id, to.priority, to.queue_order); !st) return st;
      if (job->array_id != array_id) continue;  // numbered again, in the same order as before
      nlohmann::json data = {{"from_priority", job->priority}, {"from_queue_order", job->queue_order},
                             {"priority", to.priority},        {"queue_order", to.queue_order},
                             {"array", array_id}};
      if (auto st = add_event("job.moved", job->id, std::nullopt, data); !st) return st;
    }
    return ok();
  });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  for (const auto& [job, to] : placed) {
    ActiveJob& live = active_.at(job->id);
    live.priority = to.priority;
    live.queue_order = to.queue_order;
    next_order_ = std::max(next_order_, to.queue_order);
    ready_index_.mark(job->id);
    if (job->array_id == array_id) moved.push_back(job->id);
  }
  request_pass();
  return moved;
}

}  // namespace gpuq::daemon
