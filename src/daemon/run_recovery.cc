// SPDX-License-Identifier: Apache-2.0
// Runs after a daemon restart or a reboot: each run on record as running is settled from the
// exit record its shim wrote meanwhile, re-adopted when its very shim (pid and start time) still
// runs, or settled as lost; a run of an earlier boot cannot be alive. Cleanups that were under
// way begin again before their GPUs serve; runs in attention keep their GPUs out.
#include <fmt/format.h>

#include "base/time.h"
#include "daemon/run_lifecycle.h"
#include "runner/container_run_spec.h"

namespace gpuq::daemon {

Status RunLifecycle::recover() {
  auto runs = store_.running_runs();
  if (!runs) return tl::unexpected(runs.error());
  for (const Run& run : *runs) {
    if (auto st = recover_run(run); !st) return st;
  }
  return recover_cleanups();
}

Status RunLifecycle::recover_run(const Run& run) {
  LiveRun live;
  live.run = run;
  live.slots = slots_of(inventory_, run);
  if (const ActiveJob* active = host_.active_job(run.job_id)) live.lanes = active->lanes;
  if (run.peak_gpu_mem_mib) live.peak_mib = *run.peak_gpu_mem_mib;  // never lower it
  if (auto job = host_.load_job(run.job_id, false)) {
    live.step_names = step_names_of(job->spec);
    if (runner::runs_in_containers(job->spec)) {
      if (auto runtime = world_.container_runtime(config_.containers)) live.containers = std::move(*runtime);
    }
  }
  host_.hold_slots(run.job_id, live.slots, live.lanes);
  int64_t job_id = run.job_id;
  running_[job_id] = std::move(live);
  auto record = world_.read_exit_record(run.run_dir);
  if (record) {
    settle_run(job_id, true);
    return ok();
  }
  // A run of an earlier boot cannot be alive: a pid and start time from then may match an
  // unrelated process of this boot.
  bool earlier_boot = !run.boot_id.empty() && run.boot_id != places_.boot_id;
  if (!earlier_boot) {
    auto shim = world_.adopt_shim(run.shim_pid, run.shim_start_ticks);
    if (shim) {
      auto st = host_.commit([&] {
        return host_.add_event("job.adopted", job_id, run.number, {{"pid", run.shim_pid}});
      });
      if (!st) return st;
      running_.at(job_id).shim = std::move(*shim);
      watch_exit(job_id);
      watch_steps(job_id);
      arm_timeout(job_id);
      arm_yield_deadline(job_id);
      return ok();
    }
    if (shim.error().code != Code::kNotFound) {
      return fail(shim.error().code, fmt::format("cannot tell whether the shim of job {} (pid {}) still runs: {}",
                                                 job_id, run.shim_pid, shim.error().message));
    }
  }
  // Gone: it may have finished between the first look and the process check.
  settle_run(job_id, true);
  return ok();
}

Status RunLifecycle::recover_cleanups() {
  // Runs whose cleanup was under way when the daemon stopped: sweep again before their GPUs
  // serve. Runs in attention keep their GPUs out until a person releases them.
  auto pending = store_.runs_in_cleanup(store::CleanupState::kPending);
  if (!pending) return tl::unexpected(pending.error());
  for (const Run& run : *pending) {
    if (cleaning_.count(run.id)) continue;
    std::vector<int> slots = slots_of(inventory_, run);
    std::vector<int> lanes;
    bool containers = false;
    std::string cgroup_user;
    if (auto job = host_.load_job(run.job_id, false)) {
      lanes = host_.lanes_of(job->spec);
      containers = runner::runs_in_containers(job->spec);
      cgroup_user = cgroup_user_of(job->spec.user);
    }
    host_.hold_slots(run.job_id, slots, lanes);
    begin_cleanup(run.id, {run.job_id, run.number, run.run_id, slots, lanes, 0, std::nullopt, containers, cgroup_user},
                  run.shim_start_ticks);
  }
  auto attention = store_.runs_in_cleanup(store::CleanupState::kAttention);
  if (!attention) return tl::unexpected(attention.error());
  for (const Run& run : *attention) {
    for (int slot : slots_of(inventory_, run)) {
      host_.set_attention(slot, {{"since", format_rfc3339(run.ended_at_ms)},
                                 {"job", run.job_id},
                                 {"run", run.number},
                                 {"processes", nlohmann::json::array()},
                                 {"why", "cleanup could not be confirmed (see the resource.attention "
                                         "event); kept across the daemon's restart"}});
    }
  }
  return ok();
}

}  // namespace gpuq::daemon
