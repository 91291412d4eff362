// SPDX-License-Identifier: Apache-2.0
#include "api/gpu_view.h"

#include <string>
#include <unordered_map>

namespace gpuq::api {

std::vector<GpuView> gpu_views(const std::vector<Resource>& resources, const std::vector<Run>& running,
                               const daemon::WaitList& waits) {
  std::unordered_map<std::string, int64_t> holder;
  for (const Run& run : running) {
    for (const auto& name : run.gpus) holder[name] = run.job_id;
  }
  std::vector<GpuView> out;
  out.reserve(resources.size());
  for (size_t slot = 0; slot < resources.size(); ++slot) {
    GpuView view;
    if (slot < waits.gpus.size()) view.health = waits.gpus[slot];
    auto it = holder.find(resources[slot].name);
    if (it != holder.end()) view.job = it->second;
    // The most pressing truth first: a person must act, something else holds it, a run holds
    // it, a run's leftovers are being swept.
    view.state = !view.health.attention.is_null() ? "attention"
                 : !view.health.foreign.is_null() ? "foreign"
                 : it != holder.end()             ? "busy"
                 : view.health.cleaning           ? "cleaning"
                                                  : "free";
    out.push_back(std::move(view));
  }
  return out;
}

}  // namespace gpuq::api
