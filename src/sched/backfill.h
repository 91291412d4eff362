// SPDX-License-Identifier: Apache-2.0
// The time profile behind backfill (EASY with one reservation, conservative for the first
// Snapshot::max_reservations waiting jobs with more): every claim on the machine over time —
// running jobs until their expected ends, jobs started in this pass, and the reservations
// of better waiting jobs — and the two questions backfill asks of it: does a job's whole
// need (GPUs with memory and sharing, lane units, exclusions) fit over [start, end) beside
// every claim? and when is the earliest start at which it does? A reservation that fits
// nowhere in finite time sits at "infinity" (kInfinity - 1), where only claims without an
// end reach it. Owned by one pass; reads the Machine it was built from (pools, base memory,
// lane capacities); not thread-safe (it keeps scratch space to stay allocation-free).
#pragma once

#include <cstdint>
#include <vector>

#include "sched/machine.h"

namespace gpuq::sched {

struct Claim {
  int64_t start = kPast;
  int64_t end = kInfinity;
  int64_t job = 0;
  GpuSet gpus;
  TokenSet tokens = 0;  // lanes held (one unit each, `units` for a phantom) and "gpu"
  int units = 1;
  int64_t mem = 0;        // per GPU, for sharing holds
  bool share = false;     // a sharing hold: other sharing jobs may join while memory fits
  bool reserved = false;  // a waiting job's reservation (always a whole-GPU hold)
};

// Where a need fits: its start (kInfinity = nowhere in finite time) and the GPUs free for
// it over the whole window.
struct Slot {
  int64_t start = kInfinity;
  GpuSet available;
};

class Profile {
 public:
  // Claims for the snapshot's running jobs and for busy resources no running job names.
  Profile(const Machine& machine, const Snapshot& snapshot);

  void add(const Claim& claim);
  int reservations() const { return reservations_; }
  // Every GPU some reservation names (at any time).
  const GpuSet& reserved_gpus() const { return reserved_gpus_; }

  // Whether `need` fits over [start, end): its exclusions and lane units beside every claim
  // there, and at least need.gpus GPUs among `allowed` free for it (whole, or shareable with
  // memory to spare). On success *available (if given) gets all such GPUs.
  bool fits(const Need& need, int64_t start, int64_t end, const GpuSet& allowed,
            GpuSet* available) const;

  // The earliest start strictly after `after` (a claim's end, since only ends free
  // anything) where `need` fits for its duration, on GPUs among `allowed`.
  Slot earliest_after(const Need& need, int64_t after, const GpuSet& allowed) const;

  // The reservation with the earliest start that keeps `need` from fitting over
  // [start, end) on `allowed` (it overlaps and touches its GPUs, lanes or exclusions), or
  // nullptr: for reasons.
  const Claim* blocking_reservation(const Need& need, int64_t start, int64_t end,
                                    const GpuSet& allowed) const;

 private:
  bool lanes_fit(const Need& need, int64_t start, int64_t end) const;
  void add_running(const Snapshot& snapshot);

  const Machine& machine_;
  std::vector<Claim> claims_;
  std::vector<int64_t> ends_;  // finite claim ends, sorted, unique: the candidate starts
  int reservations_ = 0;
  GpuSet reserved_gpus_;
  mutable std::vector<int64_t> shared_mem_;  // scratch: sharers' memory per GPU in a window
};

}  // namespace gpuq::sched
