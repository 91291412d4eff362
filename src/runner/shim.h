// SPDX-License-Identifier: Apache-2.0
// `gpuq shim RUN_DIR GO_FD` (or `shim - GO_FD`, a spare: below): the small supervisor that sits
// between the daemon and one run.
// Started by the daemon in its own session; it waits until the daemon has recorded the run
// (a byte on GO_FD; end of file without it means "never mind" and it exits), then starts the
// job in a new process group with output appended to the run's log, waits for it, removes
// every process left in that group (SIGTERM, grace, SIGKILL), and writes exit.json atomically.
// It is a child subreaper, so orphans of the job are reparented to it and reaped.
// SIGTERM/SIGINT ask it to stop the run: it forwards SIGTERM to the group, then SIGKILL after
// the grace period. Because it does not depend on the daemon once started, runs outlive
// daemon restarts. Single-threaded; owns its process.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace gpuq::runner {

// One run's shim made ready before it is forked: run.json read, the job's argv, environment
// and spawn attributes built. The spawner prepares it in its own process, where the pages this
// touches are mapped already, and the forked child only runs it: a forked child pays a page
// fault for every page it touches first (copy-on-write, or code not mapped in it yet), and on
// this VM a fault costs 30-90 us, more than the shim's own work. Move-only; owns the prepared
// state. A run.json that cannot be read is not an error here: run() reports it in exit.json.
class PreparedShim {
 public:
  static PreparedShim prepare(const std::string& run_dir);
  PreparedShim(PreparedShim&&) noexcept;
  ~PreparedShim();
  // Supervises the run (as run_shim does) and returns the shim's exit status.
  int run(int go_fd);

 private:
  struct State;
  explicit PreparedShim(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Supervises one run; `go_fd` is the read end of the daemon's go pipe. Returns the exit status
// for the shim process. The caller has made this process a session leader with no other fds.
int run_shim(const std::string& run_dir, int go_fd);

// A spare shim (launcher.h) is started as `shim - GO_FD`: before anything else it reads its run
// directory from GO_FD, its length first (4 bytes, this machine's order, 1 to
// kMaxAssignedRunDir), then the path; end of file before that means it was never needed, and it
// exits 0 having written nothing. Then it goes on as `shim RUN_DIR GO_FD` would.
inline constexpr const char* kSpareRunDirWord = "-";
inline constexpr size_t kMaxAssignedRunDir = 4000;  // the length and the path fit PIPE_BUF

// Entry point; argv = {"shim", RUN_DIR or "-", GO_FD}. Returns the process exit status.
int shim_main(int argc, char** argv);

}  // namespace gpuq::runner
