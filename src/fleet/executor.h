// SPDX-License-Identifier: Apache-2.0
// What the fleet agent needs of the local daemon, and nothing more: submit a claimed job, ask
// how a job is doing, cancel one, see how many GPUs are spare (and the GPUs' use and free disk),
// keep a one-GPU reservation for a pinned job, and record an event. The daemon
// stays the executor with all its guarantees; the agent only moves jobs and data between the
// bucket and it. `src/app` implements this over the queue actor (each call posted to the
// actor's thread and waited for); unit tests use a fake.
// Thread rules: the agent calls an Executor from its own thread only.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "fleet/layout.h"
#include "model/job.h"

namespace gpuq::fleet {

// A local job as the agent sees it.
struct LocalJob {
  int64_t id = 0;
  JobState state = JobState::kPending;
  bool started = false;               // a run has begun (the job left the queue's waiting line)
  std::optional<int> exit_code;       // of its last run, once it has one
  int runs = 0;
  std::string reason;                 // why it ended, for people
  std::vector<std::string> logs;      // output.log of each run, in order
  // Its last run was stopped by its own shim because the claim was not renewed in time
  // (JobSpec::claim_deadline_file): the claim is to be given up, not its end published.
  bool claim_lapsed = false;
};

// The machine, for the heartbeat and for deciding whether there is room for a job.
struct LocalMachine {
  std::vector<HeartbeatGpu> gpus;
  // GPUs that no run holds and no waiting job of the daemon wants (whoever submitted it):
  // the room the agent may fill.
  int spare_gpus = 0;
  // False while the daemon is drained (`gpuq drain`): it starts nothing, so it takes nothing.
  bool accepting = true;
  // Free space (statvfs, for an unprivileged user) of the [fleet] workdir and of /dev/shm;
  // -1 when unknown.
  int64_t workdir_free_bytes = -1;
  int64_t shm_free_bytes = -1;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Submits `spec` (its cwd and fleet_id set) to the daemon; returns the local job id.
  virtual Result<int64_t> submit(JobSpec spec) = 0;
  virtual Result<LocalJob> job(int64_t id) = 0;
  // Cancels a local job (stops its run); a job that already ended is not an error.
  virtual Status cancel(int64_t id) = 0;
  virtual Result<LocalMachine> machine() = 0;
  // Keeps `reservation` as the daemon's reservation of the GPU with device index `index` alone,
  // so that a job submitted with it runs there (fleet/layout.h, gpu_reservation); kInvalidArgument
  // when the machine has no such GPU.
  virtual Status reserve_gpu(const std::string& reservation, int index) = 0;
  // Records an event in the daemon's log (and so for its hooks): job.claimed, node.stale, ...
  // `job` is the local job id it is about, when there is one.
  virtual void event(const std::string& kind, std::optional<int64_t> job, nlohmann::json data) = 0;
};

}  // namespace gpuq::fleet
