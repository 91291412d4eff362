// SPDX-License-Identifier: Apache-2.0
// Facts about processes and files that the runner and daemon need from Linux: a process's
// start time (to tell a live run from a reused pid), pidfds (to be woken when a process that
// is not our child exits), and durable file writes. Thin wrappers over system calls; errno is
// converted to Status here. Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

#include "base/status.h"

namespace gpuq::os {

// The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat).
Result<uint64_t> process_start_ticks(pid_t pid);

// True when `pid` is alive and started at `start_ticks`: the same process, not a reused pid.
bool is_same_process(pid_t pid, uint64_t start_ticks);

// A pidfd for `pid` (pidfd_open(2)); readable once the process has exited.
Result<int> open_pidfd(pid_t pid);

// A pidfd for `pid` only while it is the process that started at `start_ticks`: the pidfd is
// opened first and the start time checked after, so the fd can never refer to a later process
// that reused the pid. kNotFound when that process is gone (or the pid is another process's).
Result<int> open_pidfd_checked(pid_t pid, uint64_t start_ticks);

// Sends `sig` to the process a pidfd refers to; kNotFound once it has exited.
Status signal_pidfd(int pidfd, int sig);

// The kernel's id of this boot (/proc/sys/kernel/random/boot_id): runs recorded under another
// boot id cannot be alive, whatever their pids and start times say.
std::string boot_id();

// True while any process is in process group `pgid` (kill(-pgid, 0)).
bool process_group_alive(pid_t pgid);

// The live processes whose process group is `pgid`, from /proc.
std::vector<pid_t> processes_in_group(pid_t pgid);
// The live processes whose session is `sid`, from /proc.
std::vector<pid_t> processes_in_session(pid_t sid);

// Writes `content` to `path` so that a crash leaves either the old file or the new one:
// write a temporary file, fsync, rename over `path`, fsync the directory. With
// `durable = false` the fsyncs are skipped (still all-or-nothing for readers, not for crashes).
// The file is created 0600: what is written this way (run.json, exit.json, script snapshots) is
// the daemon's and its runs', and may hold a job's environment.
Status write_file_atomic(const std::string& path, const std::string& content, bool durable = true);
// The same for `name` in the directory `dir_fd`: the root shim writes a run's records through
// the run directory's fd, so a directory swapped for a link later sends nothing elsewhere.
Status write_file_atomic_at(int dir_fd, const std::string& name, const std::string& content,
                            bool durable = true);

// Reads a whole file.
Result<std::string> read_file(const std::string& path);

// mkdir -p with `mode` for directories it creates (private by default: the daemon's job and run
// directories).
Status make_dirs(const std::string& path, mode_t mode = 0700);

// The absolute path of the running executable (/proc/self/exe).
Result<std::string> self_executable();

}  // namespace gpuq::os
