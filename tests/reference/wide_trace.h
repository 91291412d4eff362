// SPDX-License-Identifier: Apache-2.0
// Generated traces of wide multi-GPU training jobs, the workload on which backfill matters
// most and on which gpuq's first backfill gained little: jobs of 4-32 GPUs on a
// 256-GPU machine, heavy-tailed runtimes (log-normal, median ~30 min, capped at 5 days),
// estimates = the runtime rounded up to a power of two minutes (as users round up), and
// Poisson arrivals at a rate that offers `load` times the machine's capacity (near
// saturation, so a queue builds up and backfill has something to do). Times are whole
// seconds, so the CSV form replays exactly. Deterministic for a seed on every platform (it
// draws from std::mt19937_64 with its own distributions, not the library's).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "easy_reference.h"

namespace gpuq::reference {

struct WideTraceOptions {
  uint64_t seed = 1;
  int jobs = 3000;
  int gpus = 256;      // the machine the load is computed for
  double load = 0.97;  // offered GPU time / capacity over the arrival period
};

std::vector<RefJob> generate_wide_trace(const WideTraceOptions& options);

// The trace as `gpuq simulate --trace` reads it (src/sim/trace.h):
// id,submit_s,gpus,duration_s,est_s with ids j1, j2, ... in input order.
std::string wide_trace_csv(const std::vector<RefJob>& jobs);

// A runtime rounded up to a power of two minutes (1, 2, 4, ... minutes).
int64_t power_of_two_minutes(int64_t runtime_ms);

}  // namespace gpuq::reference
