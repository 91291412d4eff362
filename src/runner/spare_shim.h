// SPDX-License-Identifier: Apache-2.0
// One shim started ahead of the run it will serve (launcher.h's launch_spare_shim). A start
// takes it and assigns it its run directory, one write to a pipe, instead of spawning a shim
// on its path: posix_spawn waits for the exec, and the shim's start time is then read from
// /proc and a pidfd opened, ~0.9 ms of the daemon's thread on a 2-core machine, which a submit
// that starts its job on an idle GPU waits for. The owner refills the spare after the start,
// off its path. The spare is never given a run it was not assigned: unassigned, it holds no
// run, no GPU and no file, and it exits when its pipe closes (this object destroyed, or the
// daemon gone).
// Thread rules: one thread at a time. Owns the spare process until it is taken; destroyed, it
// lets the spare go and reaps it.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>

#include "base/status.h"
#include "runner/launcher.h"

namespace gpuq::runner {

class SpareShim {
 public:
  explicit SpareShim(std::string executable) : executable_(std::move(executable)) {}
  ~SpareShim();
  SpareShim(const SpareShim&) = delete;
  SpareShim& operator=(const SpareShim&) = delete;

  // A spare handed over: the shim, waiting for its go byte, and its pidfd (the taker's to close).
  struct Taken {
    LaunchedShim launched;
    int pidfd = -1;
  };
  // The spare, assigned `run_dir` (run.json must be there), or nullopt when there is none or it
  // died while it waited (then reaped): the caller spawns one of its own.
  std::optional<Taken> take(const std::string& run_dir);
  // Starts a spare when there is none. An error says why none could be (no processes left, the
  // shim binary gone); the next take() finds none.
  Status refill();
  // The waiting spare's pid; 0 when there is none.
  pid_t pid() const { return spare_ ? spare_->pid() : 0; }

 private:
  void drop();  // closes the spare's pipe and reaps it (it exits on end of file)

  std::string executable_;
  std::optional<LaunchedShim> spare_;
  int pidfd_ = -1;
};

}  // namespace gpuq::runner
