// SPDX-License-Identifier: Apache-2.0
#include "app/fleet_executor.h"

#include <sys/statvfs.h>

#include <chrono>
#include <future>

#include "runner/run_files.h"

namespace gpuq::app {
namespace {

// Free bytes of the file system holding `path`, as an unprivileged user may use them; -1 when
// it cannot be read.
int64_t free_bytes(const std::string& path) {
  struct statvfs fs {};
  if (path.empty() || ::statvfs(path.c_str(), &fs) != 0) return -1;
  return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
}

}  // namespace

template <class T>
Result<T> FleetExecutor::on_actor(std::function<Result<T>()> fn) {
  if (closed_) return fail(Code::kUnavailable, "the daemon is stopping");
  auto promise = std::make_shared<std::promise<Result<T>>>();
  auto future = promise->get_future();
  boost::asio::post(actor_, [promise, fn = std::move(fn)] { promise->set_value(fn()); });
  // The actor answers in milliseconds; a stopping daemon never does, so wait in slices.
  while (future.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (closed_) return fail(Code::kUnavailable, "the daemon is stopping");
  }
  return future.get();
}

Result<int64_t> FleetExecutor::submit(JobSpec spec) {
  return on_actor<int64_t>([this, spec = std::move(spec)]() mutable -> Result<int64_t> {
    auto submitted = queue_.submit(std::move(spec));
    if (!submitted) return tl::unexpected(submitted.error());
    return submitted->job.id;
  });
}

Result<fleet::LocalJob> FleetExecutor::job(int64_t id) {
  return on_actor<fleet::LocalJob>([this, id]() -> Result<fleet::LocalJob> {
    auto job = queue_.job(id);
    if (!job) return tl::unexpected(job.error());
    fleet::LocalJob local;
    local.id = job->id;
    local.state = job->state;
    local.started = !job->runs.empty();
    local.runs = static_cast<int>(job->runs.size());
    local.reason = job->reason;
    for (const Run& run : job->runs) local.logs.push_back(runner::log_path(run.run_dir));
    if (!job->runs.empty()) local.exit_code = job->runs.back().exit_code;
    // Said only by the shim's exit record; read once the run has ended as the shim ends it.
    if (!job->runs.empty() && job->runs.back().outcome == RunOutcome::kCancelled) {
      auto record = runner::read_exit_record(job->runs.back().run_dir);
      local.claim_lapsed = record && !record->claim_lapsed.empty();
    }
    return local;
  });
}

Status FleetExecutor::cancel(int64_t id) {
  auto done = on_actor<bool>([this, id]() -> Result<bool> {
    auto cancelled = queue_.cancel(id);
    if (!cancelled && cancelled.error().code != Code::kConflict) return tl::unexpected(cancelled.error());
    return true;
  });
  if (!done) return tl::unexpected(done.error());
  return ok();
}

Result<fleet::LocalMachine> FleetExecutor::machine() {
  auto read = on_actor<fleet::LocalMachine>([this]() -> Result<fleet::LocalMachine> {
    fleet::LocalMachine machine;
    auto waits = queue_.waits();
    const auto& resources = queue_.inventory().resources;
    for (size_t slot = 0; slot < resources.size(); ++slot) {
      fleet::HeartbeatGpu gpu;
      gpu.name = resources[slot].name;
      gpu.model = resources[slot].model;
      gpu.memory_mib = resources[slot].memory_total_mib;
      gpu.busy = slot < waits->snapshot.gpus.size() &&
                 (waits->snapshot.gpus[slot].held_exclusive || waits->snapshot.gpus[slot].sharers > 0);
      if (slot < waits->gpus.size()) {
        gpu.memory_used_mib = waits->gpus[slot].memory_used_mib;
        gpu.utilization = waits->gpus[slot].utilization;
      }
      machine.gpus.push_back(std::move(gpu));
    }
    machine.spare_gpus = queue_.spare_gpus();
    machine.accepting = !queue_.draining();
    return machine;
  });
  if (read) {  // off the actor's thread: a slow file system must not hold the queue
    read->workdir_free_bytes = free_bytes(workdir_);
    read->shm_free_bytes = free_bytes("/dev/shm");
  }
  return read;
}

Status FleetExecutor::reserve_gpu(const std::string& reservation, int index) {
  auto done = on_actor<bool>([this, reservation, index]() -> Result<bool> {
    if (auto st = queue_.reserve_gpu(reservation, index); !st) return tl::unexpected(st.error());
    return true;
  });
  if (!done) return tl::unexpected(done.error());
  return ok();
}

void FleetExecutor::event(const std::string& kind, std::optional<int64_t> job, nlohmann::json data) {
  (void)on_actor<bool>([this, kind, job, data = std::move(data)]() mutable -> Result<bool> {
    if (auto recorded = queue_.record_event(kind, job, std::move(data)); !recorded) {
      return tl::unexpected(recorded.error());
    }
    return true;
  });
}

}  // namespace gpuq::app
