// SPDX-License-Identifier: Apache-2.0
// Watching and stopping live runs: the shim's exit, the run's timeout, and a stop (cancel,
// timeout, preemption) through the shim's own pidfd. The stop comes first and its reason is
// recorded after, retried until the store takes it: a job must not outlive its timeout or a
// cancel because the disk is full.
#include <fmt/format.h>

#include <csignal>

#include "base/time.h"
#include "daemon/run_lifecycle.h"

namespace gpuq::daemon {

void RunLifecycle::watch_exit(int64_t job_id) {
  LiveRun& live = running_.at(job_id);
  if (!live.shim) return;
  live.shim->on_exit([this, job_id] { on_shim_exit(job_id); });
}

void RunLifecycle::arm_timeout(int64_t job_id) {
  const ActiveJob* active = host_.active_job(job_id);
  auto live = running_.find(job_id);
  if (!active || live == running_.end() || active->timeout_ms <= 0) return;
  live->second.timeout = world_.make_timer();
  live->second.timeout->arm(saturating_add(live->second.run.started_at_ms, active->timeout_ms),
                            [this, job_id] { on_timeout(job_id); });
}

void RunLifecycle::on_timeout(int64_t job_id) {
  auto it = running_.find(job_id);
  if (it == running_.end() || stopping_ || it->second.run.stop_reason != StopReason::kNone) return;
  const ActiveJob* active = host_.active_job(job_id);
  int64_t timeout_ms = active ? active->timeout_ms : 0;
  stop_run(job_id, StopReason::kTimeout, "job.timeout", {{"timeout_ms", timeout_ms}});
}

void RunLifecycle::stop_run(int64_t job_id, StopReason reason, const std::string& event,
                            nlohmann::json event_data) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  LiveRun& live = it->second;
  live.run.stop_reason = reason;
  live.stop_recorded = false;
  // The stop comes first: a job must not outlive its timeout or a cancel because the disk is
  // full. The reason is in memory now and recorded as soon as the store takes it.
  if (!live.ended) signal_stop(live);
  record_stop(job_id, event, std::move(event_data));
}

void RunLifecycle::signal_stop(LiveRun& live) {
  if (live.shim) live.shim->signal(SIGTERM);
  // SIGTERM reaches only the runtime's client under the shim; the container is stopped by name,
  // so that a client killed first does not leave it running.
  if (live.containers && !live.containers_stopping) {
    live.containers_stopping = true;  // a second cancel asks the shim again, not the runtime
    world_.stop_containers(*live.containers, live.run.run_id, config_.kill_grace_ms);
  }
}

void RunLifecycle::record_stop(int64_t job_id, const std::string& event, nlohmann::json event_data) {
  auto it = running_.find(job_id);
  if (it == running_.end() || it->second.stop_recorded) return;
  LiveRun& live = it->second;
  auto committed = host_.commit([&]() -> Status {
    if (auto st = store_.set_stop_reason(live.run.id, live.run.stop_reason); !st) return st;
    if (event.empty()) return ok();
    return host_.add_event(event, job_id, live.run.number, event_data);
  });
  if (committed) {
    live.stop_recorded = true;
    return;
  }
  host_.retry_later(fmt::format("stop:{}", job_id), [this, job_id, event, event_data] {
    record_stop(job_id, event, event_data);
  });
}

bool RunLifecycle::cancel(int64_t job_id, nlohmann::json event_data) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return true;
  // A cancel wins over a timeout or a preemption already under way: the job must not be
  // retried or requeued. The shim turns SIGTERM into SIGTERM for the group, then SIGKILL
  // after the grace period; the job becomes cancelled when the shim exits.
  if (it->second.run.stop_reason != StopReason::kCancel) {
    stop_run(job_id, StopReason::kCancel, "job.cancel_requested", std::move(event_data));
  } else if (!it->second.ended) {
    signal_stop(it->second);
  }
  auto now = running_.find(job_id);
  return now == running_.end() || now->second.stop_recorded;
}

void RunLifecycle::stop() {
  stopping_ = true;
  for (auto& [id, live] : running_) {
    live.shim.reset();  // its watch ends; the shim runs on
    live.timeout.reset();
    live.yield_deadline.reset();
  }
}

}  // namespace gpuq::daemon
