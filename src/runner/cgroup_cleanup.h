// SPDX-License-Identifier: Apache-2.0
// Cleanup after a run contained by its own cgroup (cgroup.h): the cleanup sweep's job
// (cleanup.h) without any /proc scan. add() writes `1` to the group's cgroup.kill, which
// SIGKILLs everything in it, escaped sessions and double forks included, and the cleanup is
// confirmed as soon as cgroup.events says `populated 0`; the caller re-checks (check()) when
// inotify reports that cgroup.events changed. Confirmed, the group's accounting is read and the
// group removed. A group still populated at the limit (a process stuck in the kernel) finishes
// unconfirmed, naming its processes; cgroup.kill is written again every grace_ms until then.
//
// A state machine over CgroupFiles and explicit times in milliseconds: no clock, no threads
// (CgroupCleaner drives one with inotify). Borrows the files, which must outlive it. Not
// thread-safe: one thread calls everything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runner/cgroup.h"
#include "runner/cleanup.h"

namespace gpuq::runner {

class CgroupCleanup {
 public:
  CgroupCleanup(CgroupFiles& files, CleanupLimits limits) : files_(files), limits_(limits) {}

  // Kills what is in `group` and checks it; the outcome at once when it is empty already.
  std::optional<CleanupOutcome> add(int64_t key, const std::string& group, int64_t now_ms);
  // Re-reads every pending group's cgroup.events (after inotify said one changed, or when
  // next_due_ms() has come), kills again where the grace has passed, and returns the cleanups
  // that finished.
  std::vector<CleanupOutcome> check(int64_t now_ms);
  bool idle() const { return pending_.empty(); }
  // When check() next has timed work (a repeated kill, a limit); INT64_MAX when idle.
  int64_t next_due_ms() const;

 private:
  struct Pending {
    int64_t key = 0;
    std::string group;
    int64_t deadline_ms = 0;
    int64_t last_kill_ms = 0;
    CleanupOutcome outcome;
  };

  void kill(Pending& pending, int64_t now_ms);
  // Confirms (and fills the outcome) when the group is empty; false while it is populated.
  bool confirm_if_empty(Pending& pending);
  std::vector<StrayProcess> members(const std::string& group);

  CgroupFiles& files_;
  CleanupLimits limits_;
  std::vector<Pending> pending_;
};

}  // namespace gpuq::runner
