// SPDX-License-Identifier: Apache-2.0
// The Queue's side of preemption: the facts the pure planner (sched/preemption.h) needs of each
// running job, the runs it chose to preempt, and the requests no longer needed because their job
// was cancelled, moved, held or started elsewhere first. RunLifecycle carries them out
// (run_preempt.cc: the yield file and its deadline, or the stop).
#include <algorithm>
#include <fmt/format.h>

#include "base/time.h"
#include "daemon/queue.h"
#include "sched/preemption.h"

namespace gpuq::daemon {
void Queue::add_preemption_facts(sched::Snapshot& snapshot) const {
  int64_t now = snapshot.now_ms;
  for (sched::RunningJob& r : snapshot.running) {
    const LiveRun* live = runs_->find(r.id);
    auto active = active_.find(r.id);
    if (!live || active == active_.end() || live->slots != r.slots || live->ended) continue;
    const Run& run = live->run;
    r.priority = active->second.priority;
    r.started_at_ms = run.started_at_ms;
    r.restart_within_ms = active->second.restart_within_ms;
    // A run already being stopped (cancel, timeout) is not a candidate.
    r.preempt = run.stop_reason == StopReason::kNone || run.stop_reason == StopReason::kPreempt
                    ? active->second.preempt
                    : PreemptMode::kNever;
    r.preempted_by = run.preempted_by;
    if (run.preempted_by != 0) {
      // It frees its GPUs by its deadline (plus the kill grace), whatever its estimate says.
      int64_t deadline = run.stop_reason == StopReason::kPreempt ? now : std::max(now, run.preempt_deadline_ms);
      r.expected_end_ms = deadline + config_.kill_grace_ms;
    }
  }
}

void Queue::apply_preemptions(sched::Snapshot& snapshot, const sched::Decision& decision) {
  if (decision.waits.empty()) return;
  // Most passes have no run that could be preempted: skip the planner (and its walk of the
  // queue) at once.
  bool candidates = std::any_of(snapshot.running.begin(), snapshot.running.end(), [](const auto& r) {
    return r.preempt != PreemptMode::kNever && r.preempted_by == 0;
  });
  if (!candidates) return;
  // GPUs started on in this pass are taken, by runs that are not candidates; restored after.
  std::vector<std::pair<int, bool>> saved;
  for (const auto& start : decision.starts) {
    for (int slot : start.slots) {
      saved.emplace_back(slot, snapshot.gpus[slot].held_exclusive);
      snapshot.gpus[slot].held_exclusive = true;
    }
  }
  sched::PreemptionPolicy policy;
  policy.gap = config_.preemption_gap;
  auto preemptions = sched::plan_preemptions(snapshot, decision, policy);
  for (auto it = saved.rbegin(); it != saved.rend(); ++it) snapshot.gpus[it->first].held_exclusive = it->second;
  for (const auto& p : preemptions) runs_->request_preemption(p.victim, p.by, p.slots);
}

void Queue::reconcile_preemptions() {
  std::vector<std::pair<int64_t, std::string>> withdraw;
  for (const auto& [id, live] : runs_->live()) {
    const Run& run = live.run;
    if (run.preempted_by == 0 || run.stop_reason != StopReason::kNone || live.settling || live.ended) continue;
    auto by = active_.find(run.preempted_by);
    auto victim = active_.find(id);
    if (by == active_.end() || by->second.state != JobState::kPending) {
      std::string state = by == active_.end() ? std::string(to_string(state_of(run.preempted_by).value_or(JobState::kCancelled)))
                                              : std::string(to_string(by->second.state));
      withdraw.emplace_back(id, fmt::format("job {} is {} now", run.preempted_by, state));
    } else if (victim != active_.end() && victim->second.priority - by->second.priority < config_.preemption_gap) {
      withdraw.emplace_back(id, fmt::format("job {} was moved: its priority is no longer better by {}",
                                            run.preempted_by, config_.preemption_gap));
    }
  }
  for (const auto& [id, why] : withdraw) runs_->withdraw_preemption(id, why);
}

}  // namespace gpuq::daemon
