// SPDX-License-Identifier: Apache-2.0
// A small helper process that forks run shims on the daemon's behalf. Starting a run by
// exec'ing the gpuq binary costs 5-9 ms here (it maps some 38 shared libraries, most of them
// libcurl's); a fork of this small, single-threaded process costs a fraction of a millisecond.
// The spawner is forked from the daemon before the daemon starts any thread (so the fork is
// safe), runs the same binary image, and exits when the daemon closes its socket; shims it
// forked keep running in their own sessions. The protocol: the daemon sends a run directory
// and the read end of the run's go pipe (SCM_RIGHTS) on a SOCK_SEQPACKET socket; the spawner
// answers with the shim's pid. The shim then behaves exactly as `gpuq shim` (runner/shim.h).
// Thread rules: start() before any thread exists; launch() from one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <sys/types.h>

#include "base/status.h"
#include "runner/launcher.h"

namespace gpuq::runner {

class ShimSpawner {
 public:
  // Forks the spawner process now.
  static Result<std::unique_ptr<ShimSpawner>> start();
  ~ShimSpawner();  // closes the socket: the spawner exits; running shims do not

  // Same contract as launch_shim(): the shim waits for LaunchedShim::release().
  Result<LaunchedShim> launch(const std::string& run_dir);
  pid_t pid() const { return pid_; }

 private:
  ShimSpawner(int socket, pid_t pid) : socket_(socket), pid_(pid) {}
  int socket_;
  pid_t pid_;
};

}  // namespace gpuq::runner
