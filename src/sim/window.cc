// SPDX-License-Identifier: Apache-2.0
#include "sim/window.h"

#include <algorithm>
#include <limits>

namespace gpuq::sim {
namespace {

// Pools: 0 for the unreserved GPUs, r + 1 for reservation r.
size_t pool_index(int reservation) { return static_cast<size_t>(reservation) + 1; }

}  // namespace

int EligibleQueue::class_of(int reservation, bool share, int64_t gpu_mem_mib,
                            std::vector<int> lanes) {
  std::sort(lanes.begin(), lanes.end());
  lanes.erase(std::unique(lanes.begin(), lanes.end()), lanes.end());
  for (size_t i = 0; i < classes_.size(); ++i) {
    const JobClass& c = classes_[i];
    if (c.reservation == reservation && c.share == share && c.gpu_mem_mib == gpu_mem_mib &&
        c.lanes == lanes) {
      return static_cast<int>(i);
    }
  }
  JobClass c;
  c.reservation = reservation;
  c.share = share;
  c.gpu_mem_mib = gpu_mem_mib;
  c.lanes = std::move(lanes);
  classes_.push_back(std::move(c));
  return static_cast<int>(classes_.size() - 1);
}

QueueKey EligibleQueue::key_for(int job, int priority, int64_t order) const {
  return QueueKey{policy_ == sched::Policy::kFifo ? 0 : priority, order, job};
}

void EligibleQueue::insert(const QueueKey& key, const QueueJobInfo& info) {
  order_.insert(key);
  Bucket& b = classes_[info.job_class].by_gpus[info.gpus];
  if (info.estimate_ms > 0) {
    b.known.insert({info.estimate_ms, key});
  } else {
    b.unknown.insert(key);
  }
}

void EligibleQueue::erase(const QueueKey& key, const QueueJobInfo& info) {
  order_.erase(key);
  auto& by_gpus = classes_[info.job_class].by_gpus;
  auto it = by_gpus.find(info.gpus);
  if (it == by_gpus.end()) return;
  if (info.estimate_ms > 0) {
    it->second.known.erase({info.estimate_ms, key});
  } else {
    it->second.unknown.erase(key);
  }
  if (it->second.known.empty() && it->second.unknown.empty()) by_gpus.erase(it);
}

// GPUs of the class's pool that a job of the class could still be placed on (P2); none when
// a waiting job holds the pool back (P4).
int EligibleQueue::available(const JobClass& c, const std::vector<sched::Gpu>& gpus,
                             const std::vector<char>& blocked) const {
  if (blocked[pool_index(c.reservation)]) return 0;
  int count = 0;
  for (const sched::Gpu& g : gpus) {
    if (!g.usable || g.reservation != c.reservation || g.held_exclusive) continue;
    if (!c.share && g.sharers > 0) continue;
    if (c.gpu_mem_mib > 0 && g.memory_free_mib < c.gpu_mem_mib) continue;
    ++count;
  }
  return count;
}

template <class Visit>
void EligibleQueue::scan_unproven(const std::vector<sched::Gpu>& gpus,
                                  const std::vector<sched::Lane>& lanes,
                                  const std::optional<QueueKey>& last,
                                  const std::vector<char>& started,
                                  const std::vector<std::pair<QueueKey, QueueJobInfo>>& waiting,
                                  int64_t alike_from_ms, Visit visit) const {
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  int pools = 1;
  for (const sched::Gpu& g : gpus) pools = std::max(pools, g.reservation + 2);
  for (const JobClass& c : classes_) pools = std::max(pools, c.reservation + 2);

  // P3: per class, the shortest known estimate among waiting jobs with at most g GPUs, and
  // the fewest GPUs among waiting jobs that rule out jobs of unknown length. P4: what waiting jobs
  // past the reservation cap hold back (their pool's GPUs, a unit of each of their lanes).
  std::vector<std::map<int, int64_t>> shortest(classes_.size());
  std::vector<int> fewest_unknown(classes_.size(), std::numeric_limits<int>::max());
  std::vector<char> blocked(static_cast<size_t>(pools), 0);
  std::vector<int> lanes_held(lanes.size(), 0);
  size_t reserved = 0;
  for (const auto& [key, info] : waiting) {
    const JobClass& c = classes_[info.job_class];
    if (info.estimate_ms > 0) {
      const int64_t length = std::min(info.estimate_ms, alike_from_ms);
      auto [it, fresh] = shortest[info.job_class].emplace(info.gpus, length);
      if (!fresh) it->second = std::min(it->second, length);
    }
    if (info.estimate_ms == 0 || unknown_is_longest_) {
      fewest_unknown[info.job_class] = std::min(fewest_unknown[info.job_class], info.gpus);
    }
    if (reserved < reservation_cap_) {
      ++reserved;
      continue;
    }
    if (info.gpus > 0) blocked[pool_index(c.reservation)] = 1;
    for (int l : c.lanes) ++lanes_held[static_cast<size_t>(l)];
  }

  auto beyond = [&](const QueueKey& k) { return !last || *last < k; };
  for (size_t ci = 0; ci < classes_.size(); ++ci) {
    const JobClass& c = classes_[ci];
    if (c.by_gpus.empty()) continue;
    bool lanes_free = std::all_of(c.lanes.begin(), c.lanes.end(), [&](int l) {
      auto lane = static_cast<size_t>(l);
      return lanes[lane].used + lanes_held[lane] < lanes[lane].capacity;
    });
    if (!lanes_free) continue;
    int avail = available(c, gpus, blocked);
    int64_t bound = kNever;  // shortest waiting estimate among jobs with <= g GPUs
    auto next_shortest = shortest[ci].begin();
    for (const auto& [g, bucket] : c.by_gpus) {
      if (g > 0 && g > avail) break;
      while (next_shortest != shortest[ci].end() && next_shortest->first <= g) {
        bound = std::min(bound, next_shortest->second);
        ++next_shortest;
      }
      // Jobs shorter than `bound` in this bucket are the window's starts or lie beyond it.
      for (const auto& [estimate, key] : bucket.known) {
        if (std::min(estimate, alike_from_ms) >= bound) break;
        if (started[static_cast<size_t>(key.job)] || !beyond(key)) continue;
        if (!visit(key)) break;
      }
      if (fewest_unknown[ci] > g && !bucket.unknown.empty()) {
        auto it = last ? bucket.unknown.upper_bound(*last) : bucket.unknown.begin();
        for (; it != bucket.unknown.end() && visit(*it); ++it) {
        }
      }
    }
  }
}

std::optional<QueueKey> EligibleQueue::first_unproven(
    const std::vector<sched::Gpu>& gpus, const std::vector<sched::Lane>& lanes,
    const std::optional<QueueKey>& last, const std::vector<char>& started,
    const std::vector<std::pair<QueueKey, QueueJobInfo>>& waiting, int64_t alike_from_ms) const {
  std::optional<QueueKey> found;
  // Each bucket's first candidate is its best: the earliest of them is the answer.
  scan_unproven(gpus, lanes, last, started, waiting, alike_from_ms, [&](const QueueKey& k) {
    if (!found || k < *found) found = k;
    return false;
  });
  return found;
}

void EligibleQueue::all_unproven(const std::vector<sched::Gpu>& gpus,
                                 const std::vector<sched::Lane>& lanes, const QueueKey& last,
                                 const std::vector<char>& started,
                                 const std::vector<std::pair<QueueKey, QueueJobInfo>>& waiting,
                                 int64_t alike_from_ms, std::vector<QueueKey>& out) const {
  out.clear();
  scan_unproven(gpus, lanes, last, started, waiting, alike_from_ms, [&](const QueueKey& k) {
    out.push_back(k);
    return true;
  });
}

}  // namespace gpuq::sim
