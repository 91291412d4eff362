// SPDX-License-Identifier: Apache-2.0
// Makes sure only one daemon serves a state directory: an exclusive flock on
// `<home>/daemon.lock`, held for the daemon's life, with the holder's pid written inside so a
// second daemon can say who holds it. The lock dies with the process (even on SIGKILL), so a
// crashed daemon never blocks its successor. Owns the lock file descriptor. Not thread-safe.
#pragma once

#include <string>

#include "base/status.h"

namespace gpuq::daemon {

class InstanceLock {
 public:
  // Takes the lock or explains who holds it (Code::kFailedPrecondition). A holder that is
  // exiting (killed, its threads still tearing down) is waited for, up to 5 s.
  static Result<InstanceLock> acquire(const std::string& path, const std::string& home);
  InstanceLock(InstanceLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  InstanceLock(const InstanceLock&) = delete;
  ~InstanceLock();

  // Records the daemon's pid (call again after forking into the background).
  void write_pid();

 private:
  explicit InstanceLock(int fd) : fd_(fd) {}
  static Result<InstanceLock> try_acquire(const std::string& path, const std::string& home,
                                          std::string& holder);
  int fd_;
};

}  // namespace gpuq::daemon
