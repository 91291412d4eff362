// SPDX-License-Identifier: Apache-2.0
// plan_preemptions(): see preemption.h for the policy. The GPU bookkeeping is the Machine's
// (slot order, pools, usability), so a pool here is exactly the pool schedule() used; per
// GPU it keeps how many of its holders are not yet chosen, so adding or dropping a victim
// costs only that victim's slots.
#include "sched/preemption.h"

#include <algorithm>

#include "sched/machine.h"

namespace gpuq::sched {
namespace {

bool about_gpus(const WaitReason& reason) {
  using Kind = WaitReason::Kind;
  if (reason.needed <= 0 || reason.usable >= 0) return false;  // no GPUs, or never runs here
  return reason.kind == Kind::kNeedsGpus || reason.kind == Kind::kNoGpuMemory ||
         reason.kind == Kind::kReservation;
}

bool mode_allows(const RunningJob& run, int64_t now) {
  switch (run.preempt) {
    case PreemptMode::kYield:
      return true;
    case PreemptMode::kRestart:
      return run.restart_within_ms <= 0 || now - run.started_at_ms < run.restart_within_ms;
    case PreemptMode::kNever:
      return false;
  }
  return false;
}

// Least loss first: worst priority, then youngest run, then higher id.
bool less_loss(const RunningJob& a, const RunningJob& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.started_at_ms != b.started_at_ms) return a.started_at_ms > b.started_at_ms;
  return a.id > b.id;
}

class Planner {
 public:
  Planner(const Snapshot& snapshot, const PreemptionPolicy& policy)
      : snapshot_(snapshot),
        machine_(snapshot),
        gap_(std::max(1, policy.gap)),
        positions_(snapshot.running.size()),
        chosen_(snapshot.running.size(), 0),
        left_(machine_.gpu_count(), 0) {
    index_gpus();
  }

  // Whether any running job could ever be a victim (else the caller need not look further).
  bool any_victim() const { return any_victim_; }
  // Whether a job of this priority could preempt some running job at all.
  bool could_preempt(int priority) const {
    return any_victim_ && static_cast<int64_t>(worst_victim_) - priority >= gap_;
  }

  bool in_flight_for(int64_t job) const {
    return std::binary_search(in_flight_for_.begin(), in_flight_for_.end(), job);
  }

  void plan(const PendingJob& job, std::vector<Preemption>& out);

 private:
  void index_gpus();
  GpuSet freeable_now(const GpuSet& eligible) const;

  const Snapshot& snapshot_;
  Machine machine_;
  const int gap_;
  std::vector<std::vector<int>> positions_;  // running job -> its distinct GPU positions
  std::vector<std::vector<int>> holders_;    // GPU position -> running jobs listing it
  std::vector<char> chosen_;                 // running job -> victim of an earlier J
  std::vector<int> left_;                    // GPU position -> holders not (yet) chosen
  GpuSet promised_;
  GpuSet phantom_;                      // busy without a RunningJob naming it: never freeable
  std::vector<int64_t> in_flight_for_;  // sorted preempted_by values
  bool any_victim_ = false;             // some run has a GPU, a mode that allows, none in flight
  int worst_victim_ = 0;                // the worst priority among those
};

void Planner::index_gpus() {
  const int count = machine_.gpu_count();
  holders_.assign(count, {});
  std::vector<int> exclusive(count, 0), sharing(count, 0);
  const int64_t now = snapshot_.now_ms;
  for (size_t r = 0; r < snapshot_.running.size(); ++r) {
    const RunningJob& run = snapshot_.running[r];
    std::vector<int>& mine = positions_[r];
    for (int slot : run.slots) {
      int g = machine_.position_of_slot(slot);
      if (g < 0 || std::find(mine.begin(), mine.end(), g) != mine.end()) continue;
      mine.push_back(g);
      holders_[g].push_back(static_cast<int>(r));
      ++(run.share ? sharing[g] : exclusive[g]);
      if (run.preempted_by != 0) promised_.set(g);
    }
    if (run.preempted_by != 0) {
      in_flight_for_.push_back(run.preempted_by);
    } else if (!mine.empty() && mode_allows(run, now)) {
      worst_victim_ = any_victim_ ? std::max(worst_victim_, run.priority) : run.priority;
      any_victim_ = true;
    }
  }
  std::sort(in_flight_for_.begin(), in_flight_for_.end());
  for (int g = 0; g < count; ++g) {
    const Gpu& gpu = snapshot_.gpus[machine_.gpu(g).index];
    if ((gpu.held_exclusive && exclusive[g] == 0) || gpu.sharers > sharing[g]) phantom_.set(g);
  }
}

GpuSet Planner::freeable_now(const GpuSet& eligible) const {
  GpuSet set;
  for (int g : members(eligible)) {
    if (left_[g] == 0) set.set(g);
  }
  return set;
}

void Planner::plan(const PendingJob& job, std::vector<Preemption>& out) {
  const Need need = machine_.need_of(job);
  if (need.gpus <= 0 || need.pool < 0) return;
  const GpuSet pool = machine_.pool_set(need.pool) & machine_.usable();
  GpuSet eligible = minus(minus(pool, promised_), phantom_);
  for (int g : members(eligible)) {
    const Gpu& gpu = snapshot_.gpus[machine_.gpu(g).index];
    if (gpu.memory_total_mib < need.mem) eligible.reset(g);
  }
  int freeable = 0;
  for (int g : members(eligible)) {
    left_[g] = static_cast<int>(holders_[g].size());
    if (left_[g] == 0) ++freeable;
  }
  if (freeable >= need.gpus) return;  // enough already free: nothing to preempt for

  std::vector<int> candidates;
  for (size_t r = 0; r < snapshot_.running.size(); ++r) {
    const RunningJob& run = snapshot_.running[r];
    if (run.preempted_by != 0 || chosen_[r]) continue;
    if (static_cast<int64_t>(run.priority) - job.priority < gap_) continue;
    if (!mode_allows(run, snapshot_.now_ms)) continue;
    bool in_pool = std::any_of(positions_[r].begin(), positions_[r].end(),
                               [&](int g) { return pool.test(g); });
    if (in_pool) candidates.push_back(static_cast<int>(r));
  }
  std::sort(candidates.begin(), candidates.end(),
            [&](int a, int b) { return less_loss(snapshot_.running[a], snapshot_.running[b]); });

  std::vector<int> victims;
  for (int r : candidates) {
    if (freeable >= need.gpus) break;
    victims.push_back(r);
    for (int g : positions_[r]) {
      if (eligible.test(g) && --left_[g] == 0) ++freeable;
    }
  }
  if (freeable < need.gpus) return;

  // Prune, latest added first: drop a victim whose GPUs are not needed after all.
  for (size_t i = victims.size(); i-- > 0;) {
    const int r = victims[i];
    int lost = 0;
    for (int g : positions_[r]) {
      if (eligible.test(g) && left_[g] == 0) ++lost;
    }
    if (freeable - lost < need.gpus) continue;
    freeable -= lost;
    for (int g : positions_[r]) {
      if (eligible.test(g)) ++left_[g];
    }
    victims.erase(victims.begin() + static_cast<std::ptrdiff_t>(i));
  }

  promised_ |= freeable_now(eligible);
  for (int r : victims) {
    chosen_[r] = 1;
    const RunningJob& run = snapshot_.running[r];
    out.push_back({run.id, job.id, run.slots});
  }
}

}  // namespace

std::vector<Preemption> plan_preemptions(const Snapshot& snapshot, const Decision& decision,
                                         const PreemptionPolicy& policy) {
  std::vector<Preemption> out;
  // FIFO ignores priority: a stopped job would be first in line again, and stopped again.
  if (snapshot.draining || snapshot.policy == Policy::kFifo || policy.max_preemptors <= 0 ||
      snapshot.running.empty()) {
    return out;
  }

  std::vector<int64_t> examined;  // in scheduling order
  for (const Wait& wait : decision.waits) {
    if (static_cast<int>(examined.size()) >= policy.max_preemptors) break;
    if (about_gpus(wait.reason)) examined.push_back(wait.job_id);
  }
  if (examined.empty()) return out;

  Planner planner(snapshot, policy);
  if (!planner.any_victim()) return out;

  // Find the examined jobs in the queue: one pass, whatever its depth.
  std::vector<int64_t> wanted = examined;
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<const PendingJob*> found(wanted.size(), nullptr);
  size_t missing = wanted.size();
  for (const PendingJob& job : snapshot.queue) {
    auto it = std::lower_bound(wanted.begin(), wanted.end(), job.id);
    if (it == wanted.end() || *it != job.id) continue;
    const PendingJob*& slot = found[it - wanted.begin()];
    if (slot != nullptr) continue;
    slot = &job;
    if (--missing == 0) break;
  }

  std::vector<char> done(wanted.size(), 0);
  for (int64_t id : examined) {
    const size_t at = std::lower_bound(wanted.begin(), wanted.end(), id) - wanted.begin();
    const PendingJob* job = found[at];
    if (job == nullptr || done[at]) continue;  // not in the snapshot's queue, or seen twice
    done[at] = 1;
    if (planner.in_flight_for(id) || !planner.could_preempt(job->priority)) continue;
    planner.plan(*job, out);
  }
  return out;
}

}  // namespace gpuq::sched
