// SPDX-License-Identifier: Apache-2.0
// The pure scheduler: given a snapshot of the machine (GPUs, lanes, running jobs with their
// expected ends) and the queue of jobs that are *eligible* to start (their dependencies,
// holds and not-before times are the daemon's business and already satisfied), decide which
// jobs start now on which GPUs, and why each other job waits. It never touches the store, the
// clock or the OS: the daemon applies its decisions, and the simulator (src/sim) replays the
// same function on a virtual clock. Thread-safe: no state.
//
// Policy, exactly as implemented (docs/scheduling.md explains it for users):
//
//  Order. Priority (lower first), then queue_order (FIFO within a priority); Policy::kFifo
//  ignores priority. Equal keys keep their order in Snapshot::queue. Each job is considered
//  once, in that order; `draining` starts nothing and every job waits with kDraining.
//
//  Fair share (fair_share.h). With Snapshot::fair_share, under kPriority and kBackfill (kFifo
//  keeps arrival order), and jobs of two or more owners in the queue (owner -1, nobody's, is
//  one more owner with no usage), each priority level is ordered by owners instead of by
//  queue_order alone: again and again, the owner with the least projected usage (Owner::
//  usage_gpu_ms plus the charges of their jobs already placed in this level; ties to the owner
//  whose next job comes first in queue order) places their next job in queue order, adding its
//  charge: max(1, gpus) x (estimate, else timeout, else 1 h). Equal owners alternate job by
//  job; a heavy owner's jobs wait behind a light one's until their projected usage meets.
//  Otherwise the order above, by the same radix sort (or none when the queue is in order).
//  Cost: O(queue log owners) and two index arrays of the queue's size per pass.
//
//  Per-user limits. A job whose owner has Owner::max_running jobs running (RunningJob::owner,
//  plus jobs started earlier in the pass), or would hold more than Owner::max_gpus GPUs with
//  it, waits with kUserLimit and holds nothing back: it is not protected, reserves nothing and
//  is not counted among better jobs. Owner -1 is never limited.
//
//  Resources. A job needs `gpus` GPUs from its pool (the GPUs of its reservation r, or the
//  GPUs of no reservation when r = -1) that are usable and free for it: a non-sharing job
//  needs GPUs with no running job (not held_exclusive, sharers == 0); a `share` job may also
//  use GPUs that only sharing jobs hold; with gpu_mem_mib > 0 the GPU must have that much
//  memory free (memory_free_mib, minus sharing jobs started in the same pass; a sharing job
//  without gpu_mem counts as 0 MiB). It takes one unit of each distinct lane it lists and
//  needs every lane it lists to have a unit left. Exclusions are symmetric over "tokens": the
//  lanes, and "gpu", which every job holding GPUs uses; a job may not start while a token its
//  tokens exclude is in use, counting jobs started earlier in the same pass. Jobs with
//  gpus = 0 and no lanes start at once. A job that can never run here (more GPUs than its pool
//  could ever give it, a lane that does not exist or has capacity 0, tokens that exclude each
//  other) waits with its reason and holds nothing back from other jobs.
//
//  Time. A running job holds its resources until expected_end_ms (an end already past counts
//  as "any moment now"); 0 = unknown, held forever. A GPU, sharer or lane unit that the
//  snapshot marks busy without a RunningJob naming it is held forever too. A job started now
//  holds its resources for estimate_ms, else timeout_ms, else forever ("unknown duration").
//  The daemon sets expected_end_ms of a run being preempted (preempted_by != 0) to its stop
//  deadline, so the GPUs it frees are seen as freeing soon (preemption.h plans which runs to
//  preempt; schedule() itself reads none of RunningJob's preemption fields).
//
//  Policy::kBackfill (default): backfill over a time profile; with the default
//  max_reservations = 1 it is EASY backfill. Jobs are taken in order; each either starts now
//  or, if it cannot and fewer than max_reservations jobs hold a reservation, gets one: the
//  earliest time t at which its whole need (GPUs, memory, lanes, exclusions) fits over
//  [t, t + duration) beside everything already in the profile (running jobs, jobs started in
//  this pass, and the reservations of better jobs), on GPUs chosen by the placement rules
//  below, busy-now GPUs first (the free ones are what a job running past t can use). A job
//  starts now only if it fits over [now, now + duration) beside all of that, i.e. it ends
//  before every reservation whose resources it would touch, or touches none of them; it
//  takes the GPUs of a reservation it ends before first, leaving the others to jobs that run
//  past it. On a machine of equal GPUs this is EASY's rule exactly (start if it fits now and
//  ends by the head's "shadow" time or uses only the "extra" GPUs), and gpuq's simulator
//  replays EASY job for job (tests/reference/backfill_quality_test.cc). A job with unknown
//  duration is checked over [now, now + backfill_unknown_limit_ms), so it may only touch
//  reservations that start at least that far ahead; with the limit 0 it touches none. A
//  reservation that cannot be placed at any finite time (it waits on something held forever)
//  is placed at "infinity" on every GPU of its pool that could take it: jobs of known
//  duration may use those GPUs now, jobs of unknown duration only if the limit > 0.
//  Reservations hold whole GPUs, even for sharing jobs (a sharer may use such a GPU only by
//  ending first); running sharers free their gpu_mem at their expected ends.
//  Guarantee (for the reserved jobs, so always for the best waiting job — the first in order
//  that does not start): when running jobs end by their expected ends and started jobs run
//  no longer than their estimate (else timeout; unknown length: forever, as assumed), no
//  start decided here moves a reserved job's start later, so the best waiting job starts no
//  later than its reservation (the next_free_in_ms of its kNeedsGpus reason), and exactly
//  when it would under kPriority when jobs run exactly as told (backfill_random_test.cc
//  checks that against a reference simulator; the reference tests check the first on wide
//  traces). Jobs past the cap have no reservation and no such promise: a worse job may start
//  ahead of them if it delays no reserved job (as under EASY); each becomes the best waiting
//  job in turn, so none starves. Where reality is kinder than the assumption — work of
//  unknown end finishes — a job of known length that backfilled beside a reservation "at
//  infinity" may hold its GPUs up to its estimate longer: the price of not idling GPUs
//  behind work that may never end. Each pass plans afresh, and a reservation names GPUs;
//  when topology or memory make GPUs unequal, a better job starting on other GPUs than its
//  reservation named can push a later job's reservation back (never the best waiting job's).
//  Cap: max_reservations >= 1 jobs get a reservation; later waiting jobs hold nothing back.
//  More than one reservation is conservative backfill for the first few jobs: it protects
//  them, and on wide multi-GPU jobs it cost mean wait against EASY (2-11% at 2-32
//  reservations on bench/backfill_bench's traces). An earlier cap was 32 and every
//  job past it held back every GPU of its pool, so that nothing deep in a long queue could
//  backfill: the main reason backfill fell short of EASY on wide jobs (1.09-1.38x EASY's
//  mean wait on those traces; 1.06-1.11x without the holding back; 1.00 with one
//  reservation). max_reservations = 0 is kPriority. For a waiting job's reason, the first
//  32 waiting jobs also learn whether they could start in finite time (kNeedsGpus, without
//  a time unless reserved). Cost: every job past the cap that finds enough GPUs free is
//  checked against the profile, except that a job needing whole GPUs and no lanes is
//  refused at once when a job of its pool with no more GPUs was refused over no longer a
//  window earlier in the pass (the profile only grows), so a deep queue of such jobs costs
//  O(queue) cheap checks plus O(profile) per refusal kept.
//
//  Policy::kPriority: no backfill, i.e. max_reservations = 0: a job that cannot start holds
//  back, until the end of the pass, every GPU of its pool that could take it, one unit of
//  each of its lanes, and every token that would exclude it; no later job may start on
//  those. Policy::kFifo: the same, ordered by queue_order.
//
//  Placement (ties go to the lowest slot). Links are Snapshot::links[slot][slot], higher is
//  better. A job of k > 1 GPUs takes the free set that maximises the minimum pairwise link,
//  then the sum of pairwise links (searched greedily from every seed GPU, with pruning). A
//  one-GPU job takes the GPU whose best link to another free GPU is weakest (then the lowest
//  sum of links to free GPUs), so that well-connected pairs stay whole; a one-GPU sharing
//  job first packs onto an already shared GPU, the one with the least memory that fits.
//
//  Reasons. Every queued job that does not start gets a WaitReason, in scheduling order: the
//  first of draining; its owner's limit; a lane that is full or excluded now; a reservation's GPUs all busy; no
//  free GPU with enough memory; too few free GPUs (with the job's expected start when it
//  is known); free GPUs held back for better jobs (the reservation it would delay and when
//  that starts, or how many better jobs wait for that pool).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/job.h"

namespace gpuq::sched {

enum class Policy { kFifo, kPriority, kBackfill };

struct Gpu {
  int slot = 0;                   // the daemon's index for this GPU (returned in Start::slots)
  bool usable = true;             // false: draining, foreign or in attention — place nothing
  int64_t memory_total_mib = 0;
  int64_t memory_free_mib = 0;    // as far as the scheduler knows (probe, minus sharing jobs)
  bool held_exclusive = false;    // a running job holds it whole
  int sharers = 0;                // running jobs sharing it
  int reservation = -1;           // index into Snapshot::reservations, or -1
};

struct Lane {
  std::string name;
  int capacity = 1;
  int used = 0;                        // units held by running jobs
  std::vector<std::string> excludes;   // lane names, or "gpu"; exclusion is symmetric
};

struct RunningJob {
  int64_t id = 0;
  std::vector<int> slots;              // GPU slots it holds
  std::vector<int> lanes;              // indices into Snapshot::lanes
  int64_t expected_end_ms = 0;         // start + estimate (or timeout); 0 when unknown
  bool share = false;
  int64_t gpu_mem_mib = 0;
  // Preemption (read by plan_preemptions() in preemption.h; schedule() ignores them).
  int priority = 50;                          // lower is better
  PreemptMode preempt = PreemptMode::kNever;  // from model/job.h
  int64_t started_at_ms = 0;
  int64_t restart_within_ms = 0;  // kRestart: only while now - started < this; 0 = always
  int64_t preempted_by = 0;       // != 0: a preemption of this run is in flight for that job
  int owner = -1;                 // index into Snapshot::owners; -1 = nobody's (never limited)
};

// Its 8-byte fields first, then the 4-byte ones and the flag: no padding between them (the
// daemon keeps one per queued job).
struct PendingJob {
  int64_t id = 0;
  int64_t queue_order = 0;             // FIFO key within a priority
  int64_t gpu_mem_mib = 0;             // per GPU; 0 = whole GPUs
  int64_t estimate_ms = 0;             // 0 = unknown
  int64_t timeout_ms = 0;              // 0 = none; an upper bound on the run time
  std::vector<int> lanes;              // indices into Snapshot::lanes
  int priority = 50;
  int gpus = 0;
  int reservation = -1;                // index into Snapshot::reservations, or -1
  int owner = -1;                      // index into Snapshot::owners; -1 = nobody's
  bool share = false;
};

// A user with queued or running jobs: their recent usage (fair share) and their limits.
struct Owner {
  // GPU-milliseconds with exponential decay (sched/fair_share.h), running jobs' time so far
  // included: what the fair-share order compares.
  double usage_gpu_ms = 0;
  int64_t max_gpus = -1;     // GPUs their running jobs may hold at once; -1 = no limit
  int64_t max_running = -1;  // running jobs; -1 = no limit
};

struct Reservation {
  std::string name;                    // e.g. the plan's group name, for reasons
  std::vector<int> slots;              // the GPUs reserved for the group
};

struct Snapshot {
  int64_t now_ms = 0;
  std::vector<Gpu> gpus;
  // links[a][b]: how well GPU slots a and b are connected (0 = across the system, higher is
  // better: e.g. the NVLink count). Empty means "all equal".
  std::vector<std::vector<int>> links;
  std::vector<Lane> lanes;
  std::vector<Reservation> reservations;
  std::vector<RunningJob> running;
  std::vector<PendingJob> queue;       // eligible jobs; any order (schedule() sorts a copy)
  // What a caller that keeps its queue indexed knows of it, so that a pass over a million jobs
  // need not read them all to learn it: `queue` is sorted by priority, then queue_order (then
  // id), as the daemon's ready index keeps it; every job of `queue` has one and the same
  // PendingJob::owner. False: not known (the pass checks). A true hint must hold.
  bool queue_in_priority_order = false;
  bool queue_has_one_owner = false;
  std::vector<Owner> owners;           // indexed by PendingJob::owner and RunningJob::owner
  // Within a priority, order jobs by their owners' usage (see "Fair share" above).
  bool fair_share = false;
  Policy policy = Policy::kBackfill;
  bool draining = false;               // start nothing new
  // A job without an estimate (or timeout) may backfill only when the better job it could
  // delay is expected to wait at least this long; 0 = such jobs never backfill.
  int64_t backfill_unknown_limit_ms = 0;
  // Policy::kBackfill: how many waiting jobs get a reservation in the time profile (1: EASY);
  // later ones hold nothing back (see the policy above); 0 makes it kPriority. Each
  // reservation costs O(profile size x (profile size + GPUs)).
  int max_reservations = 1;
  // false: Decision::waits stays empty, and the profile searches that only serve reasons
  // (whether a waiting job could start in finite time) are skipped. The starts and
  // latest_reserved_start_ms are the same either way: the simulator's passes want only
  // those (sim/simulate.cc); the daemon and preemption read the reasons.
  bool reasons = true;
};

// `value` as a T, saturated at T's bounds: what WaitReason's narrow fields are set with.
template <typename T>
constexpr T narrow_to(int64_t value) {
  if (value > std::numeric_limits<T>::max()) return std::numeric_limits<T>::max();
  if (value < std::numeric_limits<T>::min()) return std::numeric_limits<T>::min();
  return static_cast<T>(value);
}

// Why a job waits, compactly (no strings built per job in the hot path); text() renders it.
struct WaitReason {
  enum class Kind : uint8_t {
    kNeedsGpus,         // needs N GPUs, F free [, next free in ~T]
    kBehindBetterJobs,  // better jobs wait for the same resources
    kReservedForBetter, // would delay the reserved start of better job `job`
    kLaneBusy,          // lane `lane` is full (held by job `job`)
    kLaneExcluded,      // an excluding lane (or GPU work) is running: job `job`
    kNoGpuMemory,       // no GPU has gpu_mem MiB free
    kReservation,       // its reserved GPUs are busy
    kDraining,
    kUserLimit,         // starting it would take its owner past max_gpus or max_running
  };
  // `lane` and `other_lane` name a lane index, or kGpuWork for the pseudo-lane "gpu".
  static constexpr int kGpuWork = -2;

  // The fields are in runs by size (8 bytes, 4, 2, 1) and no wider than their values need: the
  // daemon keeps two waits per queued job (the published pass and the one being written), so
  // at a million queued every byte here is 2 MiB. Set the narrow ones with narrow_to() (below),
  // which saturates: a count of GPUs (at most 1,024 a job, kMaxGpus a machine) and an index of
  // a lane or reservation fit 16 bits; memory in MiB, limits and counts of jobs fit 32.
  int64_t job = 0;               // the job holding the lane / running the excluding work /
                                 // whose reservation it would delay; 0 = unknown;
                                 // -1 (kLaneExcluded) = its own lanes exclude each other
  // kNeedsGpus: when the job is expected to start; kLaneBusy: when the lane frees;
  // kReservedForBetter: when the better job starts. -1 = unknown.
  int64_t next_free_in_ms = -1;
  int32_t gpu_mem_mib = 0;       // kNoGpuMemory: the memory it needs per GPU
  // kUserLimit: the limit reached (max_running when running_limit, else max_gpus) and what
  // its owner's jobs hold of it now, counting jobs started earlier in the pass.
  int32_t limit = 0;
  int32_t in_use = 0;
  int32_t better_jobs = 0;       // better jobs waiting for the same pool (or lane)
  int16_t needed = 0;            // GPUs the job needs
  int16_t free = 0;              // GPUs free for it now (its pool, its memory, its sharing)
  int16_t lane = -1;             // kLaneBusy: the full lane; kLaneExcluded: the job's side
  int16_t other_lane = -1;       // kLaneExcluded: what excludes it (a lane, or kGpuWork)
  int16_t reservation = -1;      // kReservation: index into Snapshot::reservations
  int16_t usable = -1;           // GPUs that could ever take it, when fewer than needed
  Kind kind = Kind::kNeedsGpus;
  bool running_limit = false;    // kUserLimit: see `limit`

  std::string text(const Snapshot& snapshot) const;
};

struct Start {
  int64_t job_id = 0;
  std::vector<int> slots;  // GPU slots to hold
};

struct Wait {
  int64_t job_id = 0;
  WaitReason reason;
};

struct Decision {
  std::vector<Start> starts;
  std::vector<Wait> waits;  // one per queued job that does not start, in scheduling order
  // The latest start of a reservation made in this pass (kBackfill); -1 when none was made,
  // INT64_MAX when one waits on work held forever. A job checked over [now, now + d) with
  // now + d past it meets every claim of the pass whatever d is, so for starting now all
  // such lengths are alike (the simulator's window proof uses this: sim/window.h, P5).
  int64_t latest_reserved_start_ms = -1;
};

// Sorts a queue into scheduling order for `policy`.
void sort_queue(std::vector<PendingJob>& queue, Policy policy = Policy::kBackfill);

Decision schedule(const Snapshot& snapshot);

// The same decision, written into `buffers`' vectors (their contents are dropped, their
// capacity kept). A caller that schedules a deep queue again and again (the daemon, every
// pass) hands back an earlier Decision, so that the pass writes its waits into memory already
// mapped instead of faulting in a fresh allocation of the queue's size each time.
Decision schedule_reusing(const Snapshot& snapshot, Decision buffers);

}  // namespace gpuq::sched
