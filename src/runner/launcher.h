// SPDX-License-Identifier: Apache-2.0
// Starts a run's shim (`<gpuq> shim RUN_DIR 3`, or a spare as `<gpuq> shim - 3`) in its own
// session with posix_spawn, which is safe in the multi-threaded daemon. The shim waits on a pipe
// until release() so that the daemon can record the run (pid and start time) before any job
// code runs: if the daemon dies in between, the pipe closes and the shim exits without running
// anything.
// Owns the write end of that pipe until release() or destruction. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>

#include "base/status.h"

namespace gpuq::runner {

class LaunchedShim {
 public:
  LaunchedShim(pid_t pid, uint64_t start_ticks, int go_fd)
      : pid_(pid), start_ticks_(start_ticks), go_fd_(go_fd) {}
  LaunchedShim(LaunchedShim&& other) noexcept;
  LaunchedShim(const LaunchedShim&) = delete;
  ~LaunchedShim();  // without release(), the shim exits without running the job

  pid_t pid() const { return pid_; }
  uint64_t start_ticks() const { return start_ticks_; }
  // Lets the shim start the job.
  Status release();
  // A spare shim (launch_spare_shim) learns its run directory; run.json must be there.
  Status assign(const std::string& run_dir);

 private:
  pid_t pid_;
  uint64_t start_ticks_;
  int go_fd_;
};

// The shim binary installed beside the full binary `full` (gpuq-shim in its directory), or
// empty when there is none there that may be run.
std::string shim_binary_beside(const std::string& full);

// Spawns `executable shim run_dir 3`; run.json must already be in run_dir.
Result<LaunchedShim> launch_shim(const std::string& executable, const std::string& run_dir);

// Spawns `executable shim - 3`: a spare, started before its run is known, so that a start pays a
// write to a pipe instead of a spawn. It waits for assign() and then behaves as launch_shim()'s;
// dropped unassigned, it exits having done nothing. The pipe carries the assignment (the run
// directory's length, 4 bytes in this machine's order, then the path; see runner/shim.h) and
// then the go byte.
Result<LaunchedShim> launch_spare_shim(const std::string& executable);

}  // namespace gpuq::runner
