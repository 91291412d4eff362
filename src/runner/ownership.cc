// SPDX-License-Identifier: Apache-2.0
#include "runner/ownership.h"

#include "runner/cleanup.h"

namespace gpuq::runner {

std::optional<int64_t> owning_job(os::ProcessTable& table, pid_t pid,
                                  const std::vector<LiveRunMarker>& runs) {
  if (pid <= 0 || runs.empty()) return std::nullopt;
  if (auto marker = table.env_value(pid, kRunMarkerVariable)) {
    for (const auto& run : runs) {
      if (!run.run_id.empty() && run.run_id == *marker) return run.job_id;
    }
  }
  pid_t current = pid;
  for (int step = 0; step < 64 && current > 0; ++step) {
    auto facts = table.facts(current);
    if (!facts) return std::nullopt;
    for (const auto& run : runs) {
      if (run.shim_pid == current && run.shim_start_ticks == facts->start_ticks) return run.job_id;
    }
    if (facts->ppid == current) break;
    current = facts->ppid;
  }
  return std::nullopt;
}

}  // namespace gpuq::runner
