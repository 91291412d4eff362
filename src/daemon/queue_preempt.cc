// The Queue's side of preemption: which runs the pure planner (sched/preemption.h) chose to
// preempt, asking them to yield (the yield file, then SIGTERM at the deadline) or stopping them
// (restart mode), and withdrawing a request that is no longer needed because its job was
// cancelled, moved, held or started elsewhere first.
#include <algorithm>
#include <csignal>
#include <fmt/format.h>

#include "base/time.h"
#include "daemon/queue.h"
#include "sched/preemption.h"

namespace gpuq::daemon {
namespace {

std::string yield_file(const Run& run) { return run.run_dir + "/yield"; }

}  // namespace

void Queue::add_preemption_facts(sched::Snapshot& snapshot) const {
  int64_t now = snapshot.now_ms;
  for (sched::RunningJob& r : snapshot.running) {
    auto live = running_.find(r.id);
    auto active = active_.find(r.id);
    if (live == running_.end() || active == active_.end() || live->second.slots != r.slots ||
        live->second.ended) {
      continue;
    }
    const Run& run = live->second.run;
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
  for (const auto& p : preemptions) start_preemption(p.victim, p.by, p.slots);
}

void Queue::start_preemption(int64_t victim, int64_t by, const std::vector<int>& slots) {
  auto it = running_.find(victim);
  auto active = active_.find(victim);
  if (it == running_.end() || active == active_.end() || it->second.run.preempted_by != 0 ||
      it->second.ended || it->second.settling) {
    return;
  }
  Run& run = it->second.run;
  PreemptMode mode = active->second.preempt;
  int64_t now = world_.now_ms();
  int64_t deadline = mode == PreemptMode::kYield ? now + config_.yield_grace_ms : now;
  std::vector<std::string> gpus;
  for (int slot : slots) gpus.push_back(inventory_.resources[slot].name);
  auto committed = commit([&]() -> Status {
    if (auto st = store_.set_preemption(run.id, by, mode == PreemptMode::kYield ? deadline : 0); !st) return st;
    if (mode == PreemptMode::kRestart) {
      if (auto st = store_.set_stop_reason(run.id, StopReason::kPreempt); !st) return st;
    }
    return add_event("job.preempt_requested", victim, run.number,
                     {{"by", by},
                      {"mode", to_string(mode)},
                      {"gpus", gpus},
                      {"deadline", mode == PreemptMode::kYield ? nlohmann::json(format_rfc3339(deadline))
                                                               : nlohmann::json(nullptr)}});
  });
  if (!committed) return;
  run.preempted_by = by;
  if (mode == PreemptMode::kRestart) {
    run.stop_reason = StopReason::kPreempt;
    if (it->second.shim) it->second.shim->signal(SIGTERM);
    return;
  }
  run.preempt_deadline_ms = deadline;
  nlohmann::json request = {{"by", by}, {"deadline", format_rfc3339(deadline)}};
  if (auto written = world_.write_file(yield_file(run), request.dump() + "\n"); !written) {
    // The job cannot be asked: stop it now rather than leave the better job waiting.
    std::fprintf(stderr, "gpuq daemon: cannot write the yield file of job %lld (%s); stopping it\n",
                 static_cast<long long>(victim), written.error().message.c_str());
    stop_for_preemption(victim);
    return;
  }
  arm_yield_deadline(victim);
}

void Queue::arm_yield_deadline(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  const Run& run = it->second.run;
  if (run.preempted_by == 0 || run.preempt_deadline_ms == 0 || run.stop_reason != StopReason::kNone) return;
  auto& timer = it->second.yield_deadline;
  timer = world_.make_timer();
  timer->arm(run.preempt_deadline_ms, [this, job_id] { stop_for_preemption(job_id); });
}

void Queue::stop_for_preemption(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || stopping_ || it->second.settling || it->second.ended) return;
  const Run& run = it->second.run;
  if (run.preempted_by == 0 || run.stop_reason != StopReason::kNone) return;
  // The deadline has passed: the stop comes first, its record follows (retried if need be).
  stop_run(job_id, StopReason::kPreempt, "", nlohmann::json::object());
}

void Queue::reconcile_preemptions() {
  std::vector<std::pair<int64_t, std::string>> withdraw;
  for (const auto& [id, live] : running_) {
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
  for (const auto& [id, why] : withdraw) withdraw_preemption(id, why);
}

void Queue::withdraw_preemption(int64_t victim, const std::string& why) {
  auto it = running_.find(victim);
  if (it == running_.end()) return;
  Run& run = it->second.run;
  int64_t by = run.preempted_by;
  // The deadline stays on record: a job that already saw the file and exits 75 yielded.
  auto committed = commit([&]() -> Status {
    if (auto st = store_.set_preemption(run.id, 0, run.preempt_deadline_ms); !st) return st;
    return add_event("job.preemption_withdrawn", victim, run.number, {{"by", by}, {"why", why}});
  });
  if (!committed) return;
  run.preempted_by = 0;
  if (it->second.yield_deadline) it->second.yield_deadline->cancel();
  world_.remove_file(yield_file(run));
}

}  // namespace gpuq::daemon
