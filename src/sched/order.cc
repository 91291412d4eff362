// SPDX-License-Identifier: Apache-2.0
#include "sched/order.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace gpuq::sched {
namespace {

struct Keyed {
  uint64_t key;
  uint32_t index;
  int32_t priority;
};

int bits_for(uint64_t range) { return range == 0 ? 0 : std::bit_width(range); }

// Least-significant-digit radix sort, stable, over the low `bits` bits of the keys.
void radix_sort(std::vector<Keyed>& items, int bits) {
  // Digits of up to 12 bits: typical keys (a few priorities, up to ~1M queue positions)
  // sort in two passes, with a bucket table that fits in L1.
  const int passes = (bits + 11) / 12;
  const int digit = passes == 0 ? 1 : (bits + passes - 1) / passes;
  const size_t buckets = size_t{1} << digit;
  std::vector<Keyed> other(items.size());
  std::vector<uint32_t> count(buckets);
  for (int shift = 0; shift < bits; shift += digit) {
    std::fill(count.begin(), count.end(), 0);
    for (const Keyed& item : items) ++count[(item.key >> shift) & (buckets - 1)];
    // A digit every key shares sorts nothing.
    if (count[(items[0].key >> shift) & (buckets - 1)] == items.size()) continue;
    uint32_t total = 0;
    for (uint32_t& c : count) {
      uint32_t here = c;
      c = total;
      total += here;
    }
    for (const Keyed& item : items) other[count[(item.key >> shift) & (buckets - 1)]++] = item;
    items.swap(other);
  }
}

}  // namespace

std::vector<uint32_t> scheduling_order(const std::vector<PendingJob>& queue, Policy policy) {
  const size_t n = queue.size();
  std::vector<uint32_t> order(n);
  if (n == 0) return order;
  const bool by_priority = policy != Policy::kFifo;
  // One read of the (large) jobs: keys are packed from this copy of the two fields.
  std::vector<Keyed> items(n);
  int64_t min_priority = queue[0].priority, max_priority = min_priority;
  int64_t min_order = queue[0].queue_order, max_order = min_order;
  for (size_t i = 0; i < n; ++i) {
    const PendingJob& job = queue[i];
    items[i] = {static_cast<uint64_t>(job.queue_order), static_cast<uint32_t>(i), job.priority};
    min_priority = std::min<int64_t>(min_priority, job.priority);
    max_priority = std::max<int64_t>(max_priority, job.priority);
    min_order = std::min(min_order, job.queue_order);
    max_order = std::max(max_order, job.queue_order);
  }
  const int order_bits =
      bits_for(static_cast<uint64_t>(max_order) - static_cast<uint64_t>(min_order));
  const int priority_bits =
      by_priority ? bits_for(static_cast<uint64_t>(max_priority - min_priority)) : 0;
  if (order_bits + priority_bits > 64) {
    // Keys too wide to pack (queue_order spread over most of int64): compare directly.
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const PendingJob& x = queue[a];
      const PendingJob& y = queue[b];
      if (by_priority && x.priority != y.priority) return x.priority < y.priority;
      return x.queue_order < y.queue_order;
    });
    return order;
  }
  bool sorted = true;
  for (size_t i = 0; i < n; ++i) {
    Keyed& item = items[i];
    uint64_t key = item.key - static_cast<uint64_t>(min_order);
    if (priority_bits > 0) {
      key |= static_cast<uint64_t>(item.priority - min_priority) << order_bits;
    }
    item.key = key;
    if (i > 0 && key < items[i - 1].key) sorted = false;
  }
  // A short queue sorts faster by comparison than by clearing the radix sort's buckets.
  constexpr size_t kComparisonSortBelow = 256;
  if (!sorted && n < kComparisonSortBelow) {
    std::stable_sort(items.begin(), items.end(),
                     [](const Keyed& a, const Keyed& b) { return a.key < b.key; });
  } else if (!sorted) {
    radix_sort(items, order_bits + priority_bits);
  }
  for (size_t i = 0; i < n; ++i) order[i] = items[i].index;
  return order;
}

bool in_scheduling_order(const Snapshot& snapshot) {
  // Priority order is scheduling order unless the policy is FIFO (queue order alone).
  if (snapshot.queue_in_priority_order && snapshot.policy != Policy::kFifo) return true;
  return in_scheduling_order(snapshot.queue, snapshot.policy);
}

bool in_scheduling_order(const std::vector<PendingJob>& queue, Policy policy) {
  const bool by_priority = policy != Policy::kFifo;
  for (size_t i = 1; i < queue.size(); ++i) {
    const PendingJob& a = queue[i - 1];
    const PendingJob& b = queue[i];
    if (by_priority && a.priority != b.priority) {
      if (b.priority < a.priority) return false;
      continue;
    }
    if (b.queue_order < a.queue_order) return false;
  }
  return true;
}

}  // namespace gpuq::sched
