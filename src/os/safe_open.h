// SPDX-License-Identifier: Apache-2.0
// Opening a file beneath a trusted directory without following any symbolic link on the way:
// for a process with more rights than the owner of what it opens (the root daemon and shim in a
// job's directory, which belongs to the job's user). That user may replace any file or directory
// of theirs by a link at any moment; a plain open() would follow it and read or write, as root,
// whatever the link names (/etc/shadow). Here every component below the trusted directory must
// be a real directory or file: a link anywhere fails with ELOOP (Code::kPermissionDenied), and
// `..` or an absolute path is refused. The trusted directory itself (and the path to it) is the
// caller's to trust: make it one only root can change (the daemon's jobs directory). With O_EXCL,
// a file that exists already is Code::kConflict.
//
// Linux's openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) does it in one call; on a kernel
// without it (before 5.6: ENOSYS) the path is walked one component at a time with O_NOFOLLOW.
//
// With `regular_file`, the file is opened with O_NONBLOCK (a FIFO planted there never blocks the
// caller) and anything but a regular file is refused (Code::kPermissionDenied); with `owner`, a
// file not owned by that uid is refused too (one the user made in the daemon's place).
// Plain system calls, no state: thread-safe. Returned fds are O_CLOEXEC and the caller's to close.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <sys/types.h>

#include "base/status.h"

namespace gpuq::os {

struct BeneathOptions {
  bool regular_file = false;          // refuse anything but a regular file; open O_NONBLOCK
  std::optional<uid_t> owner;         // refuse a file (or directory) owned by anyone else
  // How the path is resolved: kKernel uses openat2 where the kernel has it, kWalk always walks
  // component by component (the fallback; tests choose it to prove it).
  enum class Resolve { kKernel, kWalk } resolve = Resolve::kKernel;
};

// Opens `relative` (no leading '/', no "..") beneath the directory `dir_fd` with open(2)'s
// `flags` (O_NOFOLLOW and O_CLOEXEC are added) and `mode` for O_CREAT.
Result<int> open_beneath_at(int dir_fd, const std::string& relative, int flags, mode_t mode = 0,
                            const BeneathOptions& options = {});
// The same beneath the directory at `trusted_dir` (opened first; that path may hold links).
Result<int> open_beneath(const std::string& trusted_dir, const std::string& relative, int flags,
                         mode_t mode = 0, const BeneathOptions& options = {});

// Reads a whole regular file beneath `trusted_dir`, refusing one larger than `max_bytes`
// (Code::kCorruption) and, with `owner`, one owned by anyone else. kNotFound when there is none.
Result<std::string> read_file_beneath(const std::string& trusted_dir, const std::string& relative,
                                      size_t max_bytes, std::optional<uid_t> owner = std::nullopt);

// Reads a whole file from an fd opened as above, at most `max_bytes` (more: Code::kCorruption).
Result<std::string> read_open_file(int fd, size_t max_bytes, const std::string& name);

// `path` split for the functions above: its directory `levels` up (the part to trust) and the
// rest. {"/var/lib/gpuq/jobs", "5/run-1/exit.json"} for ("/var/lib/gpuq/jobs/5/run-1/exit.json", 3).
std::pair<std::string, std::string> split_trusted(const std::string& path, int levels);

}  // namespace gpuq::os
