// SPDX-License-Identifier: Apache-2.0
// A thread that drives a CleanupSweep over the real (steady) clock: the daemon hands it each
// ended run's marker and gets the outcome back through a callback. The thread sleeps on a
// condition variable until the sweep's next scan is due or a cleanup is added, so an idle
// Cleaner costs nothing and a new cleanup is scanned at once.
//
// Owns the process table, the sweep and its thread. Thread rules: add() may be called from
// any thread, also from inside a `done` callback. `done` runs on the Cleaner's thread, one at a
// time, without any lock held; it should post the outcome elsewhere and return quickly, since
// scans wait for it. Destruction stops and joins the thread promptly (within one scan);
// cleanups still pending then are abandoned and their `done` is never called.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "os/process_table.h"
#include "runner/cleanup.h"

namespace gpuq::runner {

// Milliseconds of the monotonic clock: the time both cleaners (this one and the cgroup one,
// cgroup_cleaner.h) schedule their next look by.
int64_t steady_now_ms();

class Cleaner {
 public:
  using Done = std::function<void(CleanupOutcome)>;

  Cleaner(std::unique_ptr<os::ProcessTable> table, CleanupLimits limits,
          std::optional<uid_t> only_uid = default_sweep_uid());
  Cleaner(const Cleaner&) = delete;
  Cleaner& operator=(const Cleaner&) = delete;
  ~Cleaner();

  // Begins cleaning up after a run; `done` gets the outcome (with target.key as its key).
  void add(CleanupTarget target, Done done);

 private:
  void loop();

  std::unique_ptr<os::ProcessTable> table_;
  CleanupSweep sweep_;  // touched only by the thread
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;                                     // guarded by mu_
  std::vector<std::pair<CleanupTarget, Done>> incoming_;  // guarded by mu_
  // The thread's own: done callbacks and the callers' keys by the sweep's internal keys.
  std::map<int64_t, std::pair<int64_t, Done>> waiting_;
  int64_t next_key_ = 1;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace gpuq::runner
