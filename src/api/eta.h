// SPDX-License-Identifier: Apache-2.0
// ETAs for waiting jobs: the start a simulation of the live queue predicts (src/sim, the same
// scheduler the daemon runs), from running jobs' remaining estimates and waiting jobs'
// estimates. Honest about what it cannot know: when a running or waiting job has neither an
// estimate (--est) nor a timeout, no ETA is given and `note` says why. Recomputed at most every
// few seconds, and only for queues small enough to simulate within a status request.
// Used by the API thread only; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/config.h"
#include "gpu/discovery.h"
#include "model/job.h"

namespace gpuq::api {

class EtaCache {
 public:
  // A waiting job's predicted run, for GET /v1/timeline.
  struct Predicted {
    std::string name;      // "" when none
    int gpus = 0;
    int64_t start_ms = 0;  // epoch ms, as in start_ms
    int64_t end_ms = 0;    // its start plus its estimate (or timeout)
  };
  struct Etas {
    std::unordered_map<int64_t, int64_t> start_ms;  // job id -> predicted start (epoch ms)
    std::unordered_map<int64_t, Predicted> runs;    // job id -> its predicted run
    std::string note;                               // why there are none, when there are none
  };

  // `jobs` are the unfinished jobs with their runs (finished ones play no part: a dependency
  // on one is met, or its dependent is blocked, so status passes none); `now_ms` the wall clock; `seq` the newest event, so a
  // change to the queue is seen at once. A simulation that took long (a big queue) is reused
  // for kMaxAgeMs even across changes, so that status stays cheap.
  const Etas& get(const std::vector<Job>& jobs, const gpu::Inventory& inventory,
                  const daemon::Config& config, int64_t now_ms, int64_t seq);

  // Whether get() would answer from the cache now (so a caller need not load the jobs).
  bool fresh(int64_t now_ms, int64_t seq) const;
  // Caches "no ETAs" with `note` as if computed now: for a queue too big to load (more than
  // kMaxJobs unfinished jobs), which a page of the queue need not load at all.
  // `until_change`: kept only until the queue changes (a cheap finding, as "job 3 has no
  // estimate"), not for kMaxAgeMs.
  const Etas& none(std::string note, int64_t now_ms, int64_t seq, bool until_change = false);

  static constexpr int64_t kMaxAgeMs = 5'000;
  static constexpr int64_t kSlowMs = 200;
  static constexpr size_t kMaxJobs = 20'000;

 private:
  Etas compute(const std::vector<Job>& jobs, const gpu::Inventory& inventory,
               const daemon::Config& config, int64_t now_ms) const;
  Etas cached_;
  int64_t computed_at_ms_ = 0;
  int64_t computed_seq_ = -1;
  int64_t cost_ms_ = 0;
};

}  // namespace gpuq::api
