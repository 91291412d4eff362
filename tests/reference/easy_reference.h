// SPDX-License-Identifier: Apache-2.0
// A reference simulator for whole-GPU queues, independent of src/sched and src/sim, to judge
// gpuq's schedules against textbook policies: FIFO, and EASY backfill (Lifka 1995; Mu'alem and
// Feitelson 2001). It counts GPUs (no identities, topology, memory, lanes or priorities), so
// it is small enough to check by reading.
//
// The model, shared with gpuq's simulator (src/sim/simulate.h) so that results compare:
//  - a job enters the queue at submit_ms, in queue order = (submit_ms, input order);
//  - at each event time, every end at that time frees its GPUs first, then every submit at
//    that time joins the queue, then one scheduling pass runs;
//  - a started job runs exactly runtime_ms; the scheduler only knows estimate_ms, so a
//    running job is expected to end at start + estimate (an end already past counts as now).
// FIFO: start queue-head jobs while they fit; the first that does not fit blocks the rest.
// EASY: the same, then the blocked head gets a reservation at the "shadow" time, the earliest
// expected end at which enough GPUs are free for it; the GPUs free then beyond its need are
// the "extra". A later job, in queue order, starts now if it fits in the free GPUs and either
// is expected to end by the shadow time, or takes no more than the extra GPUs left (which it
// then uses up). Only the head is protected: later jobs may delay any job but the head.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuq::reference {

struct RefJob {
  int64_t submit_ms = 0;
  int gpus = 1;             // 1..machine GPUs
  int64_t runtime_ms = 0;   // what it really runs
  int64_t estimate_ms = 0;  // what the scheduler is told; > 0
};

enum class RefPolicy { kFifo, kEasy };

struct RefResult {
  std::vector<int64_t> start_ms;  // per job, in input order
  double mean_wait_s = 0;         // mean of start - submit
  // GPU time used / (GPUs x (last end - first submit)), as SimResult::utilization.
  double utilization = 0;
  int64_t makespan_ms = 0;
};

// Jobs that need more GPUs than the machine has are a caller's error: they never start, and
// the simulation stops when nothing else can (their start_ms stays -1).
RefResult simulate_reference(const std::vector<RefJob>& jobs, int gpus, RefPolicy policy);

}  // namespace gpuq::reference
