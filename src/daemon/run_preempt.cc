// SPDX-License-Identifier: Apache-2.0
// Preemption of one run, once the queue has chosen it (queue_preempt.cc): the request recorded,
// then a yielding job asked through its yield file and stopped at the deadline if it has not
// gone by then, or a restartable job stopped at once; a request withdrawn when its reason went.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>

#include "base/time.h"
#include "daemon/run_lifecycle.h"

namespace gpuq::daemon {
namespace {

std::string yield_file(const Run& run) { return run.run_dir + "/yield"; }

}  // namespace

void RunLifecycle::request_preemption(int64_t victim, int64_t by, const std::vector<int>& slots) {
  auto it = running_.find(victim);
  const ActiveJob* active = host_.active_job(victim);
  if (it == running_.end() || !active || it->second.run.preempted_by != 0 || it->second.ended ||
      it->second.settling) {
    return;
  }
  Run& run = it->second.run;
  PreemptMode mode = active->preempt;
  int64_t now = world_.now_ms();
  int64_t deadline = mode == PreemptMode::kYield ? now + config_.yield_grace_ms : now;
  std::vector<std::string> gpus;
  for (int slot : slots) gpus.push_back(inventory_.resources[slot].name);
  auto committed = host_.commit([&]() -> Status {
    if (auto st = store_.set_preemption(run.id, by, mode == PreemptMode::kYield ? deadline : 0); !st) return st;
    if (mode == PreemptMode::kRestart) {
      if (auto st = store_.set_stop_reason(run.id, StopReason::kPreempt); !st) return st;
    }
    return host_.add_event("job.preempt_requested", victim, run.number,
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
    signal_stop(it->second);
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

void RunLifecycle::arm_yield_deadline(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  const Run& run = it->second.run;
  if (run.preempted_by == 0 || run.preempt_deadline_ms == 0 || run.stop_reason != StopReason::kNone) return;
  auto& timer = it->second.yield_deadline;
  timer = world_.make_timer();
  timer->arm(run.preempt_deadline_ms, [this, job_id] { stop_for_preemption(job_id); });
}

void RunLifecycle::stop_for_preemption(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || stopping_ || it->second.settling || it->second.ended) return;
  const Run& run = it->second.run;
  if (run.preempted_by == 0 || run.stop_reason != StopReason::kNone) return;
  // The deadline has passed: the stop comes first, its record follows (retried if need be).
  stop_run(job_id, StopReason::kPreempt, "", nlohmann::json::object());
}

void RunLifecycle::withdraw_preemption(int64_t victim, const std::string& why) {
  auto it = running_.find(victim);
  if (it == running_.end()) return;
  Run& run = it->second.run;
  int64_t by = run.preempted_by;
  // The deadline stays on record: a job that already saw the file and exits 75 yielded.
  auto committed = host_.commit([&]() -> Status {
    if (auto st = store_.set_preemption(run.id, 0, run.preempt_deadline_ms); !st) return st;
    return host_.add_event("job.preemption_withdrawn", victim, run.number, {{"by", by}, {"why", why}});
  });
  if (!committed) return;
  run.preempted_by = 0;
  if (it->second.yield_deadline) it->second.yield_deadline->cancel();
  world_.remove_file(yield_file(run));
}

}  // namespace gpuq::daemon
