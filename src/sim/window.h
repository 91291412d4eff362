// SPDX-License-Identifier: Apache-2.0
// The simulator's queue of eligible jobs, in scheduling order, and the proof that lets one
// scheduling pass see only a prefix of it (the "window") without changing any decision.
//
// Why: a plan of 100,000 jobs has ~100,000 event times; handing the whole queue to
// sched::schedule at each would cost O(queue) or more per event, ~10^10 steps in all.
//
// What is passed: the first K eligible jobs in scheduling order (priority, then queue order;
// queue order only under kFifo — the order sched/scheduler.h fixes). After the pass, prove
// that no job beyond the window would have started had the scheduler seen it; when the proof
// fails, double the window (or grow it to the job the proof could not rule out, when that
// lies deeper) and ask again. The proof rests on the policy as sched/scheduler.h documents
// it, not on a copy of it:
//  (P1) Prefix: jobs are considered once each, in order, and a job's fate (start or wait,
//       and its slots) depends on the machine and on better jobs only. So the window's
//       starts are exactly those of a pass over the whole queue.
//  (P2) Fit: a job starts only on what is free for it after better starts: enough GPUs of
//       its pool (its reservation's, or the unreserved ones) that no job holds (a sharing
//       job: that no non-sharing job holds) with the memory it needs, and a unit of each of
//       its lanes. A job beyond the window that does not fit what the window left cannot
//       start.
//  (P3) Dominance: if a better job J1 waits, a worse job J2 of the same class (reservation,
//       share, gpu_mem, lanes) that needs at least as many GPUs for at least as long (both
//       estimates known and e2 >= e1; or J2's unknown and J1's unknown too — or anything,
//       when backfill_unknown_limit_ms is 0, since an unknown length is then checked over
//       [now, infinity)) waits too: it is checked against the same running jobs, starts and
//       reservations of better jobs plus J1's (or what J1 holds back), with no more free,
//       over a window at least as long.
//  (P4) Holding back: under kFifo and kPriority (and kBackfill with max_reservations 0),
//       a waiting job holds back from all worse jobs every GPU of its pool that could take
//       it and a unit of each of its lanes (scheduler.h). Under kBackfill with a cap, jobs
//       past it hold nothing back (EASY), so P4 does not apply. (Jobs that could never run
//       hold nothing back; simulate() refuses them before it starts, so every waiting job
//       counts.)
//  (P5) Alike lengths: with L the latest start of a reservation the pass made
//       (Decision::latest_reserved_start_ms), a job checked over [now, now + d) with
//       now + d > L meets every claim of the pass, whatever d is (claims that start later
//       come only from reservations; jobs beyond the window that get reservations only add
//       claims). So in P3, estimates of at least L - now + 1 all count as that length.
//  (P6) Completion: under kBackfill with a cap R >= 1 (SimMachine::max_reservations), the
//       first R waiting jobs get the reservations; a waiting job past them has no effect on
//       any other job (it holds nothing back, and its refusal only spares the scheduler work).
//       So when a prefix window has at least R waiting jobs, every job beyond it that the
//       proof cannot rule out against the machine the prefix left (the state at each later
//       job holds at least those claims, so P2/P3 only get surer deeper in the queue) is a
//       superset of the jobs beyond it that start. A pass over the prefix plus those jobs
//       (not a prefix: the deep candidates only) gives every job of it the fate it has in a
//       pass over the whole queue — each sees the same starts and reservations before it —
//       and every other job waits. No further proof is needed; the window stops growing
//       with the depth of short jobs (all_unproven lists them).
// Lane exclusions are left out of the proof: that can only make it fail, never wrongly
// succeed. With P4 a window rarely needs more than what starts + a blocker per pool,
// whatever the queue's length; the exception is a pool (a reservation) with free GPUs whose
// first job waits deep in the queue: the window must reach it. Under backfill the window
// must reach every job short enough to end before the head's reservation that fits what is
// free (those really start), so it grows with the queue when many such jobs wait deep.
// Tests: window_test.cc checks windowed == whole-queue simulations on random plans for every
// policy and cap, with lanes, a reservation and sharing; SimOptions::full_queue turns the
// window off.
//
// Owns its index; used by one simulation on one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "sched/scheduler.h"

namespace gpuq::sim {

// A job's place in scheduling order. `job` is the simulator's index of the job.
struct QueueKey {
  int64_t priority = 0;  // 0 for every job under kFifo
  int64_t order = 0;     // queue order, unique
  int job = 0;
  bool operator<(const QueueKey& o) const {
    return priority != o.priority ? priority < o.priority : order < o.order;
  }
};

// What the proof knows of a job beyond its key.
struct QueueJobInfo {
  int gpus = 0;
  int64_t estimate_ms = 0;  // 0 = unknown
  int job_class = 0;        // from EligibleQueue::class_of
};

class EligibleQueue {
 public:
  // From the Snapshot: `max_reservations` — under kBackfill, 0 makes waiting jobs hold
  // their resources back (P4), more leaves them free; and whether
  // backfill_unknown_limit_ms is 0, which makes a job of unknown length the longest of all
  // for P3 (it is checked over [now, infinity)).
  EligibleQueue(sched::Policy policy, int max_reservations, bool unknown_is_longest)
      : policy_(policy),
        // Under kBackfill with a cap, jobs past it hold nothing back (P4 never applies).
        reservation_cap_(policy == sched::Policy::kBackfill && max_reservations > 0
                             ? std::numeric_limits<size_t>::max()
                             : 0),
        unknown_is_longest_(unknown_is_longest) {}

  // The class of jobs that compete for the same resources in the same way; interned.
  int class_of(int reservation, bool share, int64_t gpu_mem_mib, std::vector<int> lanes);

  QueueKey key_for(int job, int priority, int64_t order) const;
  void insert(const QueueKey& key, const QueueJobInfo& info);
  void erase(const QueueKey& key, const QueueJobInfo& info);

  size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }
  std::set<QueueKey>::const_iterator begin() const { return order_.begin(); }
  std::set<QueueKey>::const_iterator end() const { return order_.end(); }

  // After a pass over the jobs up to and including `last` (or over no job: last = nullopt),
  // where `started[job]` marks the window's starts and `waiting` holds the window's other
  // jobs: the key of some job beyond `last` that the proof cannot rule out, or nullopt when
  // none could start. `gpus` and `lanes` are the machine after the window's starts.
  // `alike_from_ms`: known estimates at least this long count as this long (P5).
  std::optional<QueueKey> first_unproven(
      const std::vector<sched::Gpu>& gpus, const std::vector<sched::Lane>& lanes,
      const std::optional<QueueKey>& last, const std::vector<char>& started,
      const std::vector<std::pair<QueueKey, QueueJobInfo>>& waiting,
      int64_t alike_from_ms = std::numeric_limits<int64_t>::max()) const;

  // The same proof, but every job beyond `last` it cannot rule out, into `out` (cleared), in
  // no particular order: P6's candidates.
  void all_unproven(const std::vector<sched::Gpu>& gpus, const std::vector<sched::Lane>& lanes,
                    const QueueKey& last, const std::vector<char>& started,
                    const std::vector<std::pair<QueueKey, QueueJobInfo>>& waiting,
                    int64_t alike_from_ms, std::vector<QueueKey>& out) const;

 private:
  struct KnownLess {
    bool operator()(const std::pair<int64_t, QueueKey>& a,
                    const std::pair<int64_t, QueueKey>& b) const {
      return a.first != b.first ? a.first < b.first : a.second < b.second;
    }
  };
  struct Bucket {
    std::set<std::pair<int64_t, QueueKey>, KnownLess> known;  // (estimate, key), shortest first
    std::set<QueueKey> unknown;  // estimate unknown, in scheduling order
  };
  struct JobClass {
    int reservation = -1;
    bool share = false;
    int64_t gpu_mem_mib = 0;
    std::vector<int> lanes;
    std::map<int, Bucket> by_gpus;  // GPU count -> jobs
  };
  int available(const JobClass& c, const std::vector<sched::Gpu>& gpus,
                const std::vector<char>& blocked) const;
  // Calls visit(key) for the jobs beyond `last` the proof cannot rule out: per bucket in
  // order of length (known) or of the queue (unknown), until visit returns false.
  template <class Visit>
  void scan_unproven(const std::vector<sched::Gpu>& gpus, const std::vector<sched::Lane>& lanes,
                     const std::optional<QueueKey>& last, const std::vector<char>& started,
                     const std::vector<std::pair<QueueKey, QueueJobInfo>>& waiting,
                     int64_t alike_from_ms, Visit visit) const;

  sched::Policy policy_;
  size_t reservation_cap_;
  bool unknown_is_longest_;
  std::set<QueueKey> order_;
  std::vector<JobClass> classes_;
};

}  // namespace gpuq::sim
