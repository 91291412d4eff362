// SPDX-License-Identifier: Apache-2.0
// A thread that drives a CgroupCleanup (cgroup_cleanup.h) over the real clock and inotify: each
// pending run's cgroup.events is watched for IN_MODIFY, which the kernel raises when
// `populated` changes, so a cleanup is confirmed the moment the run's cgroup empties, with no
// polling and no /proc scan. The daemon's counterpart of Cleaner (cleaner.h), for runs that
// have a cgroup.
//
// Owns the inotify and wake-up descriptors, the cleanup state and the thread; borrows the
// CgroupFiles, which must outlive it. Thread rules: add() from any thread, also from inside a
// `done` callback; `done` runs on the cleaner's thread, one at a time, without locks held, and
// should post the outcome elsewhere and return. Destruction stops and joins the thread;
// cleanups still pending are abandoned and their `done` is never called.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "runner/cgroup_cleanup.h"

namespace gpuq::runner {

class CgroupCleaner {
 public:
  using Done = std::function<void(CleanupOutcome)>;

  // Fails when inotify or eventfd cannot be had (out of descriptors).
  static Result<std::unique_ptr<CgroupCleaner>> start(CgroupFiles& files, CleanupLimits limits);
  CgroupCleaner(const CgroupCleaner&) = delete;
  CgroupCleaner& operator=(const CgroupCleaner&) = delete;
  ~CgroupCleaner();

  // Kills what is left in `group` and calls `done` once it is empty (or at the limit), with
  // `key` as the outcome's key.
  void add(int64_t key, std::string group, Done done);

 private:
  CgroupCleaner(CgroupFiles& files, CleanupLimits limits, int inotify_fd, int wake_fd);
  void loop();
  void take_incoming();
  void deliver(std::vector<CleanupOutcome> outcomes);

  CleanupLimits limits_;
  CgroupCleanup cleanup_;  // the thread's own
  int inotify_fd_;
  int wake_fd_;
  std::mutex mu_;
  bool stop_ = false;                                               // guarded by mu_
  std::vector<std::pair<std::pair<int64_t, std::string>, Done>> incoming_;  // guarded by mu_
  // The thread's own: each pending cleanup's callback and inotify watch, by internal key.
  struct Waiting {
    int64_t caller_key;
    Done done;
    int watch;
  };
  std::map<int64_t, Waiting> waiting_;
  int64_t next_key_ = 1;
  std::thread thread_;  // last: starts after everything above exists
};

}  // namespace gpuq::runner
