// SPDX-License-Identifier: Apache-2.0
// Fair share between users (scheduler.h, "Fair share"): the decayed usage each user is compared
// by, and the scheduling order that interleaves users within a priority by that usage. Usage is
// GPU-time with exponential decay: a GPU-hour used one half-life ago counts half. The daemon
// (daemon/user_usage.h) and the simulator use the same functions, so a simulation and the
// daemon's ETAs charge usage as the daemon does. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/scheduler.h"

namespace gpuq::sched {

// What a job that has no estimate and no timeout is charged in the fair-share order.
constexpr int64_t kFairShareDefaultChargeMs = 3'600'000;

// `usage` decayed over `elapsed_ms` (>= 0) of half-life `half_life_ms` (<= 0: no decay).
double decayed(double usage, int64_t elapsed_ms, int64_t half_life_ms);

// The decayed GPU-ms, at `now_ms`, of `gpus` GPUs held over [start_ms, end_ms] (end <= now):
// the integral of gpus x 2^-((now - t) / half_life) over the interval, so a run counts the
// same whether it is added at its end or looked at while it runs.
double decayed_gpu_ms(int gpus, int64_t start_ms, int64_t end_ms, int64_t now_ms,
                      int64_t half_life_ms);

// What placing `job` in the order adds to its owner's projected usage: its GPUs (at least one,
// so that lane-only work interleaves too) times its estimate, else its timeout, else
// kFairShareDefaultChargeMs.
double fair_share_charge(const PendingJob& job);

// Whether the fair-share order differs from the plain one: fair share is on, the policy orders
// by priority (kFifo keeps arrival order), and the queue holds jobs of at least two owners
// (nobody's jobs, owner -1, count as one owner of their own).
bool fair_share_applies(const Snapshot& snapshot);

// The fair-share scheduling order of snapshot.queue: by priority; within a priority, taking
// again and again the owner with the least projected usage (its usage, plus the charges of its
// jobs already placed), ties to the owner whose next job comes first in queue order, and
// placing that owner's next job in queue order.
std::vector<uint32_t> fair_share_order(const Snapshot& snapshot);

}  // namespace gpuq::sched
