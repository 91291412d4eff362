// SPDX-License-Identifier: Apache-2.0
// Telling a run's GPU process from a foreign one (DESIGN.md §3: a GPU holding memory for a
// process that no run owns is *foreign*). A process belongs to a live run when its environment
// carries the run's GPUQ_RUN_ID, or when one of its ancestors is the run's shim (same pid and
// start ticks, so a reused shim pid does not count). Pure over a ProcessTable; thread-safe as
// far as the table is.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "os/process_table.h"

namespace gpuq::runner {

struct LiveRunMarker {
  int64_t job_id = 0;
  std::string run_id;  // the run's GPUQ_RUN_ID
  pid_t shim_pid = 0;
  uint64_t shim_start_ticks = 0;
};

// The job whose run owns `pid`: its GPUQ_RUN_ID names a live run, or an ancestor (walking ppid
// from pid itself, at most 64 steps) is a live run's shim with matching start ticks.
// nullopt: foreign (also when pid does not exist). `pid` must be in this process's pid
// namespace (NVML reports host pids: a daemon in a container sees other numbers).
std::optional<int64_t> owning_job(os::ProcessTable& table, pid_t pid,
                                  const std::vector<LiveRunMarker>& runs);

}  // namespace gpuq::runner
