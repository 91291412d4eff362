// SPDX-License-Identifier: Apache-2.0
#include "sched/backfill.h"

#include <algorithm>

namespace gpuq::sched {
namespace {

bool overlaps(const Claim& c, int64_t start, int64_t end) { return c.start < end && start < c.end; }

}  // namespace

Profile::Profile(const Machine& machine, const Snapshot& snapshot)
    : machine_(machine), shared_mem_(machine.gpu_count(), 0) {
  claims_.reserve(snapshot.running.size() + 64);
  add_running(snapshot);
}

void Profile::add_running(const Snapshot& snapshot) {
  const int gpu_count = machine_.gpu_count();
  const int lane_count = static_cast<int>(machine_.lanes().size());
  std::vector<char> held(gpu_count, 0);
  std::vector<int> sharers(gpu_count, 0);
  std::vector<int> lane_units(lane_count, 0);
  const int64_t now = machine_.now();
  for (const RunningJob& run : snapshot.running) {
    Claim claim;
    claim.job = run.id;
    claim.end = run.expected_end_ms <= 0 ? kInfinity : std::max(run.expected_end_ms, now + 1);
    claim.share = run.share;
    claim.mem = std::max<int64_t>(0, run.gpu_mem_mib);
    for (int slot : run.slots) {
      int g = machine_.position_of_slot(slot);
      if (g < 0) continue;
      claim.gpus.set(g);
      if (run.share) {
        ++sharers[g];
      } else {
        held[g] = 1;
      }
    }
    if (!run.slots.empty()) claim.tokens |= token_bit(kGpuToken);
    for (int l : run.lanes) {
      if (l < 0 || l >= lane_count || (claim.tokens & token_bit(l))) continue;
      claim.tokens |= token_bit(l);
      ++lane_units[l];
    }
    add(claim);
  }
  // What the snapshot marks busy but no running job names is held forever: we cannot know
  // when it frees, and assuming "soon" could let backfill delay a better job.
  for (int g = 0; g < gpu_count; ++g) {
    const Gpu& gpu = snapshot.gpus[machine_.gpu(g).index];
    Claim phantom;
    phantom.gpus.set(g);
    phantom.tokens = token_bit(kGpuToken);
    if (gpu.held_exclusive && !held[g]) {
      add(phantom);
    } else if (!gpu.held_exclusive && !held[g] && gpu.sharers > sharers[g]) {
      phantom.share = true;
      add(phantom);
    }
  }
  for (int l = 0; l < lane_count; ++l) {
    int excess = machine_.lanes()[l].used - lane_units[l];
    if (excess <= 0) continue;
    Claim phantom;
    phantom.tokens = token_bit(l);
    phantom.units = excess;
    add(phantom);
  }
}

void Profile::add(const Claim& claim) {
  claims_.push_back(claim);
  if (claim.reserved) {
    ++reservations_;
    reserved_gpus_ |= claim.gpus;
  }
  if (claim.end < kInfinity) {
    auto it = std::lower_bound(ends_.begin(), ends_.end(), claim.end);
    if (it == ends_.end() || *it != claim.end) ends_.insert(it, claim.end);
  }
}

bool Profile::lanes_fit(const Need& need, int64_t start, int64_t end) const {
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    const int l = std::countr_zero(rest);
    const TokenSet bit = token_bit(l);
    const int capacity = machine_.lanes()[l].capacity;
    // Usage only rises at a claim's start, so its peak over the window is at the window's
    // start or at the start of a claim inside it.
    auto usage_at = [&](int64_t point) {
      int used = 0;
      for (const Claim& c : claims_) {
        if ((c.tokens & bit) && c.start <= point && point < c.end) used += c.units;
      }
      return used;
    };
    if (usage_at(start) + 1 > capacity) return false;
    for (const Claim& c : claims_) {
      if ((c.tokens & bit) && c.start > start && c.start < end &&
          usage_at(c.start) + 1 > capacity) {
        return false;
      }
    }
  }
  return true;
}

bool Profile::fits(const Need& need, int64_t start, int64_t end, const GpuSet& allowed,
                   GpuSet* available) const {
  if (!allowed.has_at_least(need.gpus)) return false;
  GpuSet busy, touched;
  bool ok = true;
  for (const Claim& c : claims_) {
    if (!overlaps(c, start, end)) continue;
    if (c.tokens & need.excludes) {
      ok = false;
      break;
    }
    if (need.gpus == 0 || !c.gpus.intersects(allowed)) continue;
    if (need.share && c.share && !c.reserved) {
      for (int g : members(c.gpus & allowed)) {
        shared_mem_[g] += c.mem;
        touched.set(g);
      }
    } else {
      busy |= c.gpus;
    }
  }
  GpuSet free = minus(allowed, busy);
  // As in Machine::free_for: a job without gpu_mem fits any memory (it counts as 0 MiB).
  if (ok && need.mem > 0) {
    for (int g : members(free)) {
      int64_t mem = machine_.gpu(g).base_mem - (touched.test(g) ? shared_mem_[g] : 0);
      if (mem < need.mem) free.reset(g);
    }
  }
  for (int g : members(touched)) shared_mem_[g] = 0;
  if (!ok || !free.has_at_least(need.gpus)) return false;
  if (need.lanes != 0 && !lanes_fit(need, start, end)) return false;
  if (available != nullptr) *available = free;
  return true;
}

Slot Profile::earliest_after(const Need& need, int64_t after, const GpuSet& allowed) const {
  Slot slot;
  auto it = std::upper_bound(ends_.begin(), ends_.end(), after);
  for (; it != ends_.end(); ++it) {
    if (fits(need, *it, add_time(*it, need.duration), allowed, &slot.available)) {
      slot.start = *it;
      return slot;
    }
  }
  slot.available = GpuSet{};
  return slot;
}

const Claim* Profile::blocking_reservation(const Need& need, int64_t start, int64_t end,
                                           const GpuSet& allowed) const {
  const Claim* best = nullptr;
  for (const Claim& c : claims_) {
    if (!c.reserved || !overlaps(c, start, end)) continue;
    bool touches = (c.tokens & (need.excludes | need.lanes)) != 0 ||
                   (need.gpus > 0 && c.gpus.intersects(allowed));
    if (touches && (best == nullptr || c.start < best->start)) best = &c;
  }
  return best;
}

}  // namespace gpuq::sched
