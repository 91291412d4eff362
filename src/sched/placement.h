// SPDX-License-Identifier: Apache-2.0
// GPU choice: which of the GPUs available to a job it gets. Multi-GPU jobs get the
// best-connected set (maximise the minimum pairwise link, then the sum); one-GPU jobs get the
// GPU whose loss breaks the least (its best link to another available GPU is weakest, then
// its sum of links), so well-connected pairs stay whole for jobs that need them; one-GPU
// sharing jobs pack onto GPUs that are already shared. Ties go to the lowest slot. Links
// come from Snapshot::links (by slot), copied once per pass into a dense matrix by GPU
// position. Owned by one pass; const after construction, so safe to share between reads.
#pragma once

#include <vector>

#include "sched/machine.h"

namespace gpuq::sched {

class Placer {
 public:
  explicit Placer(const Machine& machine);

  // `count` GPUs out of `available` (which has at least that many). `shared` are the GPUs
  // already shared now, which a sharing job prefers; pass an empty set for reservations.
  GpuSet choose(const GpuSet& available, int count, const Need& need, const GpuSet& shared) const;

  int link(int a, int b) const { return links_[a * n_ + b]; }
  bool uniform() const { return uniform_; }

 private:
  GpuSet lowest(const GpuSet& available, int count) const;
  int choose_one(const GpuSet& available) const;
  GpuSet choose_many(const GpuSet& available, int count) const;

  const Machine& machine_;
  int n_ = 0;
  std::vector<int> links_;  // n_ x n_, by GPU position
  bool uniform_ = true;     // every pair equally linked: placement is "lowest slots"
};

}  // namespace gpuq::sched
