// SPDX-License-Identifier: Apache-2.0
// One shim started ahead of the run it will serve (launcher.h's launch_spare_shim). A start
// takes it and assigns it its run directory, one write to a pipe, instead of spawning a shim
// on its path: posix_spawn waits for the exec, and the shim's start time is then read from
// /proc and a pidfd opened, 0.3-0.9 ms of the daemon's thread on a 2-core machine, which a
// submit that starts its job on an idle GPU waits for. The owner refills the spare after the
// start, off its path. The spare is never given a run it was not assigned: unassigned, it
// holds no run, no GPU and no file; it exits when its pipe closes (the daemon gone), and is
// killed and reaped when this object is destroyed. A spare's start time becomes its run's
// shim's, which the marker sweep after the run uses as the start of the processes it looks
// at: one older than max_age_ms is not handed out but replaced, so that start stays close to
// the run's own.
// Thread rules: one thread at a time. Owns the spare process until it is taken.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

#include "base/status.h"
#include "runner/launcher.h"

namespace gpuq::runner {

class SpareShim {
 public:
  static constexpr int64_t kMaxAgeMs = 10'000;
  explicit SpareShim(std::string executable, int64_t max_age_ms = kMaxAgeMs)
      : executable_(std::move(executable)), max_age_ms_(max_age_ms) {}
  ~SpareShim();
  SpareShim(const SpareShim&) = delete;
  SpareShim& operator=(const SpareShim&) = delete;

  // A spare handed over: the shim, waiting for its go byte, and its pidfd (the taker's to close).
  struct Taken {
    LaunchedShim launched;
    int pidfd = -1;
  };
  // The spare, assigned `run_dir` (run.json must be there), or nullopt when there is none, it
  // died while it waited, or it is older than max_age_ms (then reaped): the caller spawns one
  // of its own.
  std::optional<Taken> take(const std::string& run_dir);
  // Starts a spare when there is none. An error says why none could be (no processes left, the
  // shim binary gone); the next take() finds none.
  Status refill();
  // The waiting spare's pid; 0 when there is none.
  pid_t pid() const { return spare_ ? spare_->pid() : 0; }

 private:
  void drop();  // kills the spare and reaps it
  int64_t age_ms() const;  // since the spare started (its start ticks against the boot clock)

  std::string executable_;
  int64_t max_age_ms_;
  std::optional<LaunchedShim> spare_;
  int pidfd_ = -1;
};

}  // namespace gpuq::runner
