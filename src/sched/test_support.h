// SPDX-License-Identifier: Apache-2.0
// Test-only helpers for the scheduler's tests (linked into sched_test, not gpuq_sched):
// snapshot builders, a checker that every start in a Decision is valid for its Snapshot
// (written independently of the scheduler's own bookkeeping, as a reference), and an
// event-driven reference simulator that replays schedule() at every job end on a virtual
// clock, with jobs running exactly as long as the scheduler was told.
// Plain functions; no state; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace gpuq::sched::testing {

// `count` free, usable GPUs with slots 0..count-1 and `mem_mib` of memory each.
Snapshot machine(int count, int64_t mem_mib = 80000);

// One 80000 MiB GPU (slot 0) shared by job 100 (30000 MiB, ends an hour after now_ms) and job
// 101 (40000 MiB, ends two hours after): 10000 MiB free now, 40000 after the hour, all of it
// after two.
Snapshot shared_by_two(int64_t now_ms);

// job(1, 2).priority(10).estimate(30 * kMin): a PendingJob, readably.
class JobBuilder {
 public:
  JobBuilder(int64_t id, int gpus) {
    job_.id = id;
    job_.gpus = gpus;
  }
  JobBuilder& priority(int p) { return job_.priority = p, *this; }
  JobBuilder& order(int64_t o) { return job_.queue_order = o, *this; }
  JobBuilder& lanes(std::vector<int> l) { return job_.lanes = std::move(l), *this; }
  JobBuilder& mem(int64_t mib) { return job_.gpu_mem_mib = mib, *this; }
  JobBuilder& share() { return job_.share = true, *this; }
  JobBuilder& estimate(int64_t ms) { return job_.estimate_ms = ms, *this; }
  JobBuilder& timeout(int64_t ms) { return job_.timeout_ms = ms, *this; }
  JobBuilder& reservation(int r) { return job_.reservation = r, *this; }
  JobBuilder& owner(int o) { return job_.owner = o, *this; }
  operator PendingJob() const { return job_; }

 private:
  PendingJob job_;
};
inline JobBuilder job(int64_t id, int gpus) { return JobBuilder(id, gpus); }

// run(7).slots({0}).ends(kNow + 5 * kMin): a RunningJob.
class RunBuilder {
 public:
  explicit RunBuilder(int64_t id) { run_.id = id; }
  RunBuilder& slots(std::vector<int> s) { return run_.slots = std::move(s), *this; }
  RunBuilder& lanes(std::vector<int> l) { return run_.lanes = std::move(l), *this; }
  RunBuilder& ends(int64_t at_ms) { return run_.expected_end_ms = at_ms, *this; }
  RunBuilder& share(int64_t mib) { return run_.share = true, run_.gpu_mem_mib = mib, *this; }
  RunBuilder& owner(int o) { return run_.owner = o, *this; }
  operator RunningJob() const { return run_; }

 private:
  RunningJob run_;
};
inline RunBuilder run(int64_t id) { return RunBuilder(id); }

inline Lane lane(std::string name, int capacity, std::vector<std::string> excludes = {}) {
  Lane l;
  l.name = std::move(name);
  l.capacity = capacity;
  l.excludes = std::move(excludes);
  return l;
}

inline Reservation reservation(std::string name, std::vector<int> slots) {
  Reservation r;
  r.name = std::move(name);
  r.slots = std::move(slots);
  return r;
}

std::vector<int64_t> started(const Decision& decision);
std::vector<int64_t> waiting(const Decision& decision);
// The slots a started job got; empty when it did not start.
std::vector<int> slots_of(const Decision& decision, int64_t job);
// The reason a job waits; nullptr when it started.
const WaitReason* reason_of(const Decision& decision, int64_t job);
// The rendered reason, or "started".
std::string text_of(const Decision& decision, const Snapshot& snapshot, int64_t job);

// "" when the decision is valid for the snapshot: every queued job started or waits exactly
// once, and every start fits (GPUs exist, are usable, in the right reservation, free or
// shareable with memory to spare; lanes have units; no exclusion is broken, counting jobs
// started earlier in the same pass). Otherwise what is wrong.
std::string check_decision(const Snapshot& snapshot, const Decision& decision);

// The snapshot in a few readable lines, for failure messages.
std::string describe(const Snapshot& snapshot);

struct SimResult {
  std::map<int64_t, int64_t> start;  // job id -> start time; absent = never started
  std::vector<Decision> passes;      // every pass's decision, in order
  std::string error;                 // the first invalid decision, if any
};

// Runs `initial` (its running jobs end at their expected ends, which must be known) and its
// queue: schedule(), apply the starts, advance to the next end, repeat, until the queue is
// empty or nothing runs and nothing starts. A started job runs `duration[id]` ms: give
// jobs with an estimate (or timeout) exactly that, and jobs of unknown length kForever (the
// scheduler assumes they never end), so that the scheduler's view is true.
// GPU and lane state in each snapshot is derived from the simulated running jobs.
inline constexpr int64_t kForever = INT64_MAX / 8;
SimResult simulate(const Snapshot& initial, const std::map<int64_t, int64_t>& duration);

}  // namespace gpuq::sched::testing
