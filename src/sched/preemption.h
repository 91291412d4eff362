// SPDX-License-Identifier: Apache-2.0
// Preemption planning: which running jobs to stop (yield or restart, DESIGN.md §2) so that
// better waiting jobs can start. Pure like schedule(): it reads a Snapshot and the Decision
// schedule() returned for it, and names victims; the daemon carries them out (yield file or
// SIGTERM), marks each victim's RunningJob::preempted_by and sets its expected_end_ms to the
// stop deadline, so that later passes see the preemption in flight. No clock, no I/O, no
// state; thread-safe.
//
// Policy, exactly as implemented (docs/scheduling.md, "Preemption", explains it for users):
//
//  Nothing when the snapshot is draining, nor under Policy::kFifo (priorities do not order that
//  queue: a stopped job would be first in line again, and stopped again). Otherwise the waiting jobs J of decision.waits are
//  taken in that (scheduling) order, and those first in line for GPUs are examined: J.gpus > 0
//  (WaitReason::needed), reason kNeedsGpus, kNoGpuMemory or kReservation, and not a job that
//  can never run here (the scheduler set WaitReason::usable). Jobs waiting behind better jobs,
//  for a reservation of a better job, on a lane or an exclusion are not examined. Scanning
//  stops once max_preemptors jobs were examined. An examined J is skipped when a preemption
//  for it is already in flight (some running job has preempted_by == J): one set at a time.
//
//  Candidates for J: running jobs R with preempted_by == 0, not chosen for an earlier J in
//  this call, R.priority - J.priority >= gap (a gap below 1 counts as 1), whose mode allows
//  it (kYield always; kRestart when restart_within_ms <= 0 or now - started_at_ms <
//  restart_within_ms; kNever never), and that hold at least one usable GPU of J's pool (the
//  GPUs of J's reservation, or of none when J.reservation == -1).
//
//  A GPU is freeable for J when it is in J's pool, usable, memory_total_mib >= J.gpu_mem_mib,
//  not promised, not marked busy without a RunningJob naming it (held_exclusive with no
//  non-sharing RunningJob listing it, or more `sharers` than sharing RunningJobs listing it),
//  and every running job listing it in RunningJob::slots (exclusive or sharing) is a chosen
//  victim — or none does (already free). Preemption frees whole GPUs, also for sharing jobs.
//
//  Choice: candidates in order of least loss — worst priority first (highest number), then
//  youngest run (latest started_at_ms), then higher id — are added until at least J.gpus
//  GPUs are freeable; if all candidates do not make enough, J preempts nothing. Then the
//  chosen victims are walked in reverse order of addition and each whose removal still
//  leaves J.gpus freeable is dropped. If nothing had to be added (enough already free), J
//  preempts nothing and promises nothing.
//
//  Promises: the slots of every running job with preempted_by != 0, and every GPU freeable
//  for a J that got a preemption earlier in this call, are promised: no later J counts them.
//  Hence at most one preemption is in flight per GPU (DESIGN.md §2), and a victim serves one
//  preemptor only.
//
//  Output: one Preemption per victim, grouped by preemptor in examination order, victims in
//  order of least loss; `slots` are the victim's RunningJob::slots.
//
//  Cost: O(waits scanned) cheap checks plus one pass over the queue to find the examined
//  jobs, then per examined job O(R log R + GPUs + slots listed) for R running jobs: bounded
//  by max_preemptors × (running jobs + GPUs) beside the scan, whatever the queue's depth.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/scheduler.h"

namespace gpuq::sched {

struct PreemptionPolicy {
  int gap = 40;             // a preemptor's priority must be better by at least this
  int max_preemptors = 32;  // waiting jobs examined per call
};

struct Preemption {
  int64_t victim = 0;      // RunningJob::id to stop (by its PreemptMode)
  int64_t by = 0;          // the waiting job it makes room for
  std::vector<int> slots;  // GPU slots the victim frees (its RunningJob::slots)
};

// Which running jobs to preempt so that better waiting jobs can start, given the snapshot and
// the decision schedule(snapshot) returned for it.
std::vector<Preemption> plan_preemptions(const Snapshot& snapshot, const Decision& decision,
                                         const PreemptionPolicy& policy);

}  // namespace gpuq::sched
