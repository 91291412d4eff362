// SPDX-License-Identifier: Apache-2.0
#include "sched/fair_share.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

#include "sched/order.h"

namespace gpuq::sched {
namespace {

// An owner's turn in one priority level: the least projected usage goes first, then the owner
// whose next job comes first.
struct Turn {
  double projected = 0;
  uint32_t next = 0;  // position in the order of the owner's next job
  uint32_t owner = 0; // Snapshot owner + 1 (0: nobody's)
  bool operator>(const Turn& other) const {
    if (projected != other.projected) return projected > other.projected;
    return next > other.next;
  }
};

uint32_t owner_key(const PendingJob& job, size_t owners) {
  return job.owner < 0 || static_cast<size_t>(job.owner) >= owners
             ? 0
             : static_cast<uint32_t>(job.owner) + 1;
}

// What the ordering reads of the job at each place of the plain order, gathered in one pass
// (the jobs are large and visited out of memory order; reading them once keeps this cheap).
struct Facts {
  uint32_t owner = 0;
  int priority = 0;
  double charge = 0;
};

// Reorders order[begin, end) (one priority level, in queue order) by fair share.
void interleave(const Snapshot& snapshot, const std::vector<Facts>& facts,
                std::vector<uint32_t>& order, size_t begin, size_t end,
                std::vector<uint32_t>& next_of, std::vector<uint32_t>& head,
                std::vector<uint32_t>& tail, std::vector<uint32_t>& placed) {
  constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> touched;
  for (size_t pos = begin; pos < end; ++pos) {
    const uint32_t key = facts[pos].owner;
    next_of[pos] = kNone;
    if (head[key] == kNone) {
      head[key] = static_cast<uint32_t>(pos);
      touched.push_back(key);
    } else {
      next_of[tail[key]] = static_cast<uint32_t>(pos);
    }
    tail[key] = static_cast<uint32_t>(pos);
  }
  if (touched.size() > 1) {
    std::priority_queue<Turn, std::vector<Turn>, std::greater<>> turns;
    for (uint32_t key : touched) {
      const double usage = key == 0 ? 0.0 : snapshot.owners[key - 1].usage_gpu_ms;
      turns.push({usage, head[key], key});
    }
    placed.clear();
    while (!turns.empty()) {
      Turn turn = turns.top();
      turns.pop();
      placed.push_back(order[turn.next]);
      turn.projected += facts[turn.next].charge;
      turn.next = next_of[turn.next];
      if (turn.next != kNone) turns.push(turn);
    }
    std::copy(placed.begin(), placed.end(), order.begin() + static_cast<ptrdiff_t>(begin));
  }
  for (uint32_t key : touched) head[key] = kNone;
}

}  // namespace

double decayed(double usage, int64_t elapsed_ms, int64_t half_life_ms) {
  if (half_life_ms <= 0 || elapsed_ms <= 0) return usage;
  return usage * std::exp2(-static_cast<double>(elapsed_ms) / static_cast<double>(half_life_ms));
}

double decayed_gpu_ms(int gpus, int64_t start_ms, int64_t end_ms, int64_t now_ms,
                      int64_t half_life_ms) {
  if (gpus <= 0 || end_ms <= start_ms) return 0;
  end_ms = std::min(end_ms, now_ms);
  if (end_ms <= start_ms) return 0;
  if (half_life_ms <= 0) return static_cast<double>(gpus) * static_cast<double>(end_ms - start_ms);
  // gpus x H/ln2 x (2^-((now - end)/H) - 2^-((now - start)/H))
  const double h = static_cast<double>(half_life_ms);
  const double at_end = std::exp2(-static_cast<double>(now_ms - end_ms) / h);
  const double at_start = std::exp2(-static_cast<double>(now_ms - start_ms) / h);
  return static_cast<double>(gpus) * h / std::log(2.0) * (at_end - at_start);
}

double fair_share_charge(const PendingJob& job) {
  const int64_t length = job.estimate_ms > 0  ? job.estimate_ms
                         : job.timeout_ms > 0 ? job.timeout_ms
                                              : kFairShareDefaultChargeMs;
  return static_cast<double>(std::max(1, job.gpus)) * static_cast<double>(length);
}

bool fair_share_applies(const Snapshot& snapshot) {
  if (!snapshot.fair_share || snapshot.policy == Policy::kFifo || snapshot.queue.empty() ||
      snapshot.queue_has_one_owner) {
    return false;
  }
  const uint32_t first = owner_key(snapshot.queue.front(), snapshot.owners.size());
  for (const PendingJob& job : snapshot.queue) {
    if (owner_key(job, snapshot.owners.size()) != first) return true;
  }
  return false;
}

std::vector<uint32_t> fair_share_order(const Snapshot& snapshot) {
  const std::vector<PendingJob>& queue = snapshot.queue;
  std::vector<uint32_t> order;
  if (in_scheduling_order(snapshot)) {
    order.resize(queue.size());
    std::iota(order.begin(), order.end(), 0);
  } else {
    order = scheduling_order(queue, snapshot.policy);
  }
  const size_t n = order.size();
  std::vector<Facts> facts(n);
  constexpr size_t kAhead = 16;  // fetch a few jobs ahead: the order is not memory order
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(&queue[order[i + kAhead]]);
    const PendingJob& job = queue[order[i]];
    facts[i] = {owner_key(job, snapshot.owners.size()), job.priority, fair_share_charge(job)};
  }
  std::vector<uint32_t> next_of(n), placed;
  std::vector<uint32_t> head(snapshot.owners.size() + 1, UINT32_MAX);
  std::vector<uint32_t> tail(snapshot.owners.size() + 1, UINT32_MAX);
  size_t begin = 0;
  while (begin < n) {
    size_t end = begin + 1;
    while (end < n && facts[end].priority == facts[begin].priority) ++end;
    interleave(snapshot, facts, order, begin, end, next_of, head, tail, placed);
    begin = end;
  }
  return order;
}

}  // namespace gpuq::sched
