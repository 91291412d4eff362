// SPDX-License-Identifier: Apache-2.0
// The scheduling order of a queue, computed without copying the jobs: indices into
// Snapshot::queue sorted by (priority, queue_order), or by queue_order alone for
// Policy::kFifo; equal keys keep their order in the queue (the sort is stable). A radix sort
// on one packed 64-bit key keeps this linear for the deep queues a pass must handle in a few
// milliseconds, and an already ordered queue (the daemon keeps its queue ordered) costs one
// scan, and no indices at all when the caller asks in_scheduling_order() first. Pure
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/scheduler.h"

namespace gpuq::sched {

std::vector<uint32_t> scheduling_order(const std::vector<PendingJob>& queue, Policy policy);

// Whether `queue` is already in scheduling order for `policy` (then the order is the queue's
// own, and a pass walks it directly, allocating nothing of the queue's size).
bool in_scheduling_order(const std::vector<PendingJob>& queue, Policy policy);
// The same for a snapshot's queue, taking its queue_in_priority_order hint without a check.
bool in_scheduling_order(const Snapshot& snapshot);

}  // namespace gpuq::sched
