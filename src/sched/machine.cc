// SPDX-License-Identifier: Apache-2.0
#include "sched/machine.h"

#include <algorithm>
#include <string_view>

namespace gpuq::sched {
namespace {

int64_t end_of(const RunningJob& run, int64_t now) {
  if (run.expected_end_ms <= 0) return kInfinity;
  // An end already past means the job is overdue: it may end any moment, so it still holds
  // its resources now but not a millisecond more as far as reservations are concerned.
  return std::max(run.expected_end_ms, now + 1);
}

}  // namespace

Machine::Machine(const Snapshot& snapshot) : snapshot_(&snapshot), now_(snapshot.now_ms) {
  add_gpus(snapshot);
  add_lanes(snapshot);
  add_running(snapshot);
}

void Machine::add_gpus(const Snapshot& snapshot) {
  std::vector<int> order(snapshot.gpus.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto by_slot = [&](int a, int b) { return snapshot.gpus[a].slot < snapshot.gpus[b].slot; };
  // Snapshots list GPUs in slot order (the daemon's and the simulator's do): one scan.
  if (!std::is_sorted(order.begin(), order.end(), by_slot)) {
    std::stable_sort(order.begin(), order.end(), by_slot);
  }
  gpus_.reserve(std::min<size_t>(order.size(), kMaxGpus));
  for (int index : order) {
    const Gpu& gpu = snapshot.gpus[index];
    if (static_cast<int>(gpus_.size()) == kMaxGpus) break;
    if (!gpus_.empty() && gpus_.back().slot == gpu.slot) continue;  // a duplicate slot
    GpuState state;
    state.index = index;
    state.slot = gpu.slot;
    state.mem_now = gpu.memory_free_mib;
    state.base_mem = gpu.memory_free_mib;
    gpus_.push_back(state);
  }
  // A GPU belongs to the reservation its Gpu::reservation names; a snapshot may instead list
  // it in Reservation::slots, which counts for GPUs that name none.
  int reservations = static_cast<int>(snapshot.reservations.size());
  for (const GpuState& g : gpus_) {
    reservations = std::max(reservations, snapshot.gpus[g.index].reservation + 1);
  }
  pools_.assign(reservations + 1, GpuSet{});
  std::vector<int> listed(gpus_.size(), -1);
  for (int r = static_cast<int>(snapshot.reservations.size()) - 1; r >= 0; --r) {
    for (int slot : snapshot.reservations[r].slots) {
      int g = position_of_slot(slot);
      if (g >= 0) listed[g] = r;
    }
  }
  for (int g = 0; g < gpu_count(); ++g) {
    const Gpu& gpu = snapshot.gpus[gpus_[g].index];
    int r = gpu.reservation >= 0 ? gpu.reservation : listed[g];
    gpus_[g].pool = r + 1;
    pools_[r + 1].set(g);
    if (gpu.usable) usable_.set(g);
  }
  general_usable_ = pools_[0] & usable_;
}

void Machine::add_lanes(const Snapshot& snapshot) {
  int count = std::min<int>(static_cast<int>(snapshot.lanes.size()), kMaxLanes);
  lanes_.resize(count);
  for (int l = 0; l < count; ++l) {
    lanes_[l].capacity = std::max(0, snapshot.lanes[l].capacity);
    lanes_[l].used = std::max(0, snapshot.lanes[l].used);
    if (lanes_[l].used > 0) tokens_now_ |= token_bit(l);
  }
  auto find_lane = [&](std::string_view name) {
    for (int l = 0; l < count; ++l) {
      if (snapshot.lanes[l].name == name) return l;
    }
    return -1;
  };
  for (int l = 0; l < count; ++l) {
    for (const std::string& name : snapshot.lanes[l].excludes) {
      int other = name == "gpu" ? kGpuToken : find_lane(name);
      if (other < 0 || other == l) continue;  // unknown names and self-exclusion mean nothing
      excludes_[l] |= token_bit(other);
      excludes_[other] |= token_bit(l);
    }
  }
}

void Machine::add_running(const Snapshot& snapshot) {
  std::vector<char> held(gpus_.size(), 0), shared(gpus_.size(), 0);
  std::vector<int64_t> sharer_mem(gpus_.size(), 0);
  std::vector<int> listed_units(lanes_.size(), 0);
  for (const RunningJob& run : snapshot.running) {
    for (int slot : run.slots) {
      int g = position_of_slot(slot);
      if (g < 0) continue;
      if (run.share) {
        shared[g] = 1;
        sharer_mem[g] += std::max<int64_t>(0, run.gpu_mem_mib);
      } else {
        held[g] = 1;
      }
    }
    if (!run.slots.empty()) {
      tokens_now_ |= token_bit(kGpuToken);
      if (token_holder_[kGpuToken] == 0) token_holder_[kGpuToken] = run.id;
    }
    TokenSet seen = 0;
    for (int l : run.lanes) {
      if (l < 0 || l >= static_cast<int>(lanes_.size()) || (seen & token_bit(l))) continue;
      seen |= token_bit(l);
      ++listed_units[l];
      LaneState& lane = lanes_[l];
      if (lane.holder == 0) lane.holder = run.id;
      if (token_holder_[l] == 0) token_holder_[l] = run.id;
      lane.free_at = std::min(lane.free_at, end_of(run, now_));
    }
  }
  for (size_t l = 0; l < lanes_.size(); ++l) {
    lanes_[l].used = std::max(lanes_[l].used, listed_units[l]);
    if (lanes_[l].used > 0) tokens_now_ |= token_bit(static_cast<int>(l));
  }
  for (int g = 0; g < gpu_count(); ++g) {
    const Gpu& gpu = snapshot.gpus[gpus_[g].index];
    bool is_held = held[g] || gpu.held_exclusive;
    bool is_shared = !is_held && (shared[g] || gpu.sharers > 0);
    if (is_held || is_shared) tokens_now_ |= token_bit(kGpuToken);
    GpuState& state = gpus_[g];
    if (is_held) {
      state.base_mem = std::max(gpu.memory_free_mib, gpu.memory_total_mib);
    } else {
      state.base_mem = gpu.memory_free_mib + sharer_mem[g];
    }
    if (!usable_.test(g)) continue;
    if (is_shared) shared_now_.set(g);
    if (!is_held && !is_shared) whole_free_.set(g);
  }
}

int Machine::position_of_slot(int slot) const {
  auto it = std::lower_bound(gpus_.begin(), gpus_.end(), slot,
                             [](const GpuState& g, int s) { return g.slot < s; });
  return it != gpus_.end() && it->slot == slot ? static_cast<int>(it - gpus_.begin()) : -1;
}

const GpuSet& Machine::pool_set(int pool) const {
  static const GpuSet kEmpty;
  return pool >= 0 && pool < pool_count() ? pools_[pool] : kEmpty;
}

Need Machine::need_of(const PendingJob& job) const {
  Need need;
  need.id = job.id;
  need.owner = job.owner;
  need.gpus = std::max(0, job.gpus);
  if (need.gpus > 0) {
    need.reservation = job.reservation;
    need.pool =
        job.reservation < 0 ? 0 : (job.reservation + 1 < pool_count() ? job.reservation + 1 : -1);
    need.share = job.share;
    need.mem = std::max<int64_t>(0, job.gpu_mem_mib);
    need.tokens = token_bit(kGpuToken);
  }
  for (int l : job.lanes) {
    if (l < 0 || l >= static_cast<int>(lanes_.size())) {
      need.bad_lane = l;
      continue;
    }
    need.lanes |= token_bit(l);
  }
  need.tokens |= need.lanes;
  for (TokenSet rest = need.tokens; rest != 0; rest &= rest - 1) {
    need.excludes |= excludes_[std::countr_zero(rest)];
  }
  if (job.estimate_ms > 0) {
    need.duration = job.estimate_ms;
  } else if (job.timeout_ms > 0) {
    need.duration = job.timeout_ms;
  }
  need.known_duration = need.duration < kInfinity;
  return need;
}

GpuSet Machine::could_ever_take(const Need& need) const {
  if (need.pool < 0 || need.gpus == 0) return {};
  if (need.mem == 0 && need.pool == 0) return general_usable_;
  uint64_t hash = (static_cast<uint64_t>(need.mem) * 0x9e3779b97f4a7c15ULL) ^ need.pool;
  EverEntry& entry = ever_cache_[(hash >> 32) % kEverCacheSize];
  if (entry.mem == need.mem && entry.pool == need.pool) return entry.set;
  GpuSet set = pools_[need.pool] & usable_;
  if (need.mem > 0) {
    for (int g : members(set)) {
      if (gpus_[g].base_mem < need.mem) set.reset(g);
    }
  }
  entry = {need.pool, need.mem, set};
  return set;
}

GpuSet Machine::free_ignoring_memory(const Need& need) const {
  if (need.pool < 0) return {};
  GpuSet set = need.share ? (whole_free_ | shared_now_) : whole_free_;
  return set &= pools_[need.pool];
}

GpuSet Machine::free_for(const Need& need) const {
  GpuSet set = free_ignoring_memory(need);
  if (need.mem > 0) {
    for (int g : members(set)) {
      if (gpus_[g].mem_now < need.mem) set.reset(g);
    }
  }
  return set;
}

bool Machine::lanes_possible(const Need& need) const {
  if (need.bad_lane >= 0 || (need.excludes & need.tokens) != 0) return false;
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    if (lanes_[std::countr_zero(rest)].capacity < 1) return false;
  }
  return true;
}

int Machine::full_lane(const Need& need) const {
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    int l = std::countr_zero(rest);
    if (lanes_[l].used >= lanes_[l].capacity) return l;
  }
  return -1;
}

int Machine::held_back_lane(const Need& need) const {
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    int l = std::countr_zero(rest);
    if (lanes_[l].used + lanes_[l].held_back >= lanes_[l].capacity) return l;
  }
  return -1;
}

void Machine::apply_start(const Need& need, const GpuSet& gpus) {
  for (int g : members(gpus)) {
    whole_free_.reset(g);
    if (need.share) {
      shared_now_.set(g);
      gpus_[g].mem_now -= need.mem;
    } else {
      shared_now_.reset(g);
    }
  }
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    LaneState& lane = lanes_[std::countr_zero(rest)];
    ++lane.used;
    if (lane.holder == 0) lane.holder = need.id;
  }
  tokens_now_ |= need.tokens;
  for (TokenSet rest = need.tokens; rest != 0; rest &= rest - 1) {
    int64_t& holder = token_holder_[std::countr_zero(rest)];
    if (holder == 0) holder = need.id;
  }
}

void Machine::hold_back(const Need& need, const GpuSet& could_take) {
  held_back_gpus_ |= could_take;
  for (TokenSet rest = need.lanes; rest != 0; rest &= rest - 1) {
    ++lanes_[std::countr_zero(rest)].held_back;
  }
  barred_ |= need.excludes;
}

}  // namespace gpuq::sched
