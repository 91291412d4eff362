// SPDX-License-Identifier: Apache-2.0
// What each GPU shows in the API — its state and the job holding it — decided in one place for
// every endpoint that reports GPUs (the Resource objects of /v1/status and /v1/gpus, and
// gpuq_gpus in /metrics), so that they can never disagree. Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "daemon/queue.h"
#include "model/job.h"

namespace gpuq::api {

// Every state a GPU can show, most pressing first (docs/api.md, "Resource").
inline constexpr std::array<std::string_view, 5> kGpuStates = {"attention", "foreign", "busy",
                                                               "cleaning", "free"};

struct GpuView {
  std::string_view state;   // one of kGpuStates
  int64_t job = 0;          // the job whose run holds it; 0 when none
  daemon::GpuHealth health;  // what the actor published about it (default when unknown)
};

// One view per inventory slot. `running` are the runs in progress (the store's
// running_runs()); `waits` is the actor's last published pass.
std::vector<GpuView> gpu_views(const std::vector<Resource>& resources, const std::vector<Run>& running,
                               const daemon::WaitList& waits);

}  // namespace gpuq::api
