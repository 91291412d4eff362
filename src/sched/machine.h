// SPDX-License-Identifier: Apache-2.0
// The machine as one scheduling pass sees it *now*: GPUs in slot order with their pools and
// memory, lane counters, the tokens (lanes and "gpu") in use and the symmetric exclusions
// between them, plus what better waiting jobs hold back (kPriority-style claims). It is the
// fast, allocation-free side of a pass: cheap set operations answer "could this job start
// now?" for the 100,000th job as quickly as for the first. The time side (reservations) is
// backfill.h's Profile. Also the per-job view, Need, computed once per job from PendingJob.
// Owned by one pass (scheduler.cc); not thread-safe; holds a pointer to the snapshot.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "sched/bits.h"
#include "sched/scheduler.h"

namespace gpuq::sched {

// Times: kInfinity is "never" (an unknown end); kPast is "before now".
inline constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max() / 4;
inline constexpr int64_t kPast = std::numeric_limits<int64_t>::min() / 4;

// t + d that saturates at kInfinity (d >= 0).
inline int64_t add_time(int64_t t, int64_t d) { return d >= kInfinity - t ? kInfinity : t + d; }

struct GpuState {
  int index = 0;  // into Snapshot::gpus
  int slot = 0;
  int pool = 0;          // 0 = no reservation; r + 1 = reservation r
  int64_t mem_now = 0;   // free now, after this pass's sharing starts
  int64_t base_mem = 0;  // free once none of our jobs runs on it
};

struct LaneState {
  int capacity = 0;
  int used = 0;                 // running units plus units started in this pass
  int held_back = 0;            // units held back for better waiting jobs
  int waiting = 0;              // better jobs waiting that need this lane (for reasons)
  int64_t holder = 0;           // a job holding a unit, for reasons; 0 = unknown
  int64_t free_at = kInfinity;  // earliest end of a running holder (reasons only)
};

// What one queued job needs, in the pass's terms.
struct Need {
  int64_t id = 0;
  int gpus = 0;
  int pool = 0;          // as GpuState::pool; -1 = a reservation that has no GPUs
  int reservation = -1;  // PendingJob::reservation
  bool share = false;
  int64_t mem = 0;
  TokenSet lanes = 0;            // lane bits only
  TokenSet tokens = 0;           // lanes, plus kGpuToken when gpus > 0
  TokenSet excludes = 0;         // tokens that may not be in use beside it
  int bad_lane = -1;             // a lane index it names that cannot be tracked
  int64_t duration = kInfinity;  // estimate, else timeout, else kInfinity
  bool known_duration = false;
  int owner = -1;                // PendingJob::owner
};

class Machine {
 public:
  explicit Machine(const Snapshot& snapshot);

  Need need_of(const PendingJob& job) const;

  // GPUs of `need`'s pool that it could ever use (usable, and memory once ours end).
  GpuSet could_ever_take(const Need& need) const;
  // GPUs it could use now, ignoring what better jobs hold back.
  GpuSet free_for(const Need& need) const;
  // Same without the memory filter (to tell "no memory" from "no GPU").
  GpuSet free_ignoring_memory(const Need& need) const;

  // Whether every lane it names exists and has a capacity, and its tokens do not exclude
  // each other: false = it can never run here.
  bool lanes_possible(const Need& need) const;
  // A lane of `need` that is full now, or -1.
  int full_lane(const Need& need) const;
  // A lane of `need` whose free units are all held back for better jobs, or -1.
  int held_back_lane(const Need& need) const;

  void apply_start(const Need& need, const GpuSet& gpus);
  // Holds back, for the rest of the pass, what a waiting job that got no reservation needs
  // (`could_take` is could_ever_take(need), which the caller has at hand).
  void hold_back(const Need& need, const GpuSet& could_take);

  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  const GpuState& gpu(int g) const { return gpus_[g]; }
  const std::vector<GpuState>& gpus() const { return gpus_; }
  int position_of_slot(int slot) const;  // -1 when no GPU has that slot
  const GpuSet& usable() const { return usable_; }
  const GpuSet& shared_now() const { return shared_now_; }
  const GpuSet& held_back_gpus() const { return held_back_gpus_; }
  const GpuSet& pool_set(int pool) const;
  int pool_count() const { return static_cast<int>(pools_.size()); }

  const std::vector<LaneState>& lanes() const { return lanes_; }
  LaneState& lane(int l) { return lanes_[l]; }
  TokenSet tokens_now() const { return tokens_now_; }
  TokenSet barred() const { return barred_; }
  TokenSet excludes_of(int token) const { return excludes_[token]; }
  int64_t token_holder(int token) const { return token_holder_[token]; }

  int64_t now() const { return now_; }
  const Snapshot& snapshot() const { return *snapshot_; }

 private:
  void add_gpus(const Snapshot& snapshot);
  void add_lanes(const Snapshot& snapshot);
  void add_running(const Snapshot& snapshot);

  const Snapshot* snapshot_;
  int64_t now_;
  std::vector<GpuState> gpus_;  // slot order
  std::vector<GpuSet> pools_;   // [0] = no reservation, [r + 1] = reservation r
  GpuSet usable_;
  GpuSet general_usable_;  // usable and in no reservation: most jobs' answer
  GpuSet whole_free_;      // usable, nothing of ours or anyone's on it
  GpuSet shared_now_;      // usable, only sharing jobs on it
  GpuSet held_back_gpus_;
  std::vector<LaneState> lanes_;
  TokenSet tokens_now_ = 0;
  TokenSet barred_ = 0;  // tokens that would exclude a waiting better job
  std::array<TokenSet, 64> excludes_{};
  std::array<int64_t, 64> token_holder_{};
  // could_ever_take() answers by (pool, memory): deep queues repeat a few sizes, so a small
  // direct-mapped cache turns an O(GPUs) scan per job into a lookup.
  struct EverEntry {
    int pool = -1;
    int64_t mem = -1;
    GpuSet set;
  };
  static constexpr int kEverCacheSize = 32;
  mutable std::array<EverEntry, kEverCacheSize> ever_cache_{};
};

}  // namespace gpuq::sched
