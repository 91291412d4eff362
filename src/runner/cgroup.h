// SPDX-License-Identifier: Apache-2.0
// Containment of runs by cgroup v2 (docs/containment.md). Where the daemon may write a cgroup v2
// subtree (its own cgroup, delegated by systemd, or a configured `[cgroup] root`), every run
// gets its own cgroup `<root>/runs/<run id>`: nothing the job starts can leave it (setsid and
// double forks included), `cgroup.kill` stops all of it, `cgroup.events` says when it is empty,
// and cpu.stat / memory.peak account for it. Elsewhere the marker sweep (cleanup.h) stays.
//
// The cgroup file system is reached only through CgroupFiles, so the logic here and in
// cgroup_cleanup.h runs in unit tests over an in-memory tree. RunCgroups borrows its
// CgroupFiles (which must outlive it) and keeps no state besides the root: its methods are
// safe from any thread as far as the files' own implementation is.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace gpuq::runner {

// The handful of cgroup file operations containment needs. Paths are absolute.
class CgroupFiles {
 public:
  virtual ~CgroupFiles() = default;
  virtual Result<std::string> read(const std::string& path) = 0;
  // One write(2) of `text` (cgroup files take one value per write).
  virtual Status write(const std::string& path, const std::string& text) = 0;
  // mkdir; kConflict when it exists already.
  virtual Status make_group(const std::string& path) = 0;
  // rmdir; the kernel refuses while the group holds processes or children.
  virtual Status remove_group(const std::string& path) = 0;
  virtual bool exists(const std::string& path) = 0;
};

std::unique_ptr<CgroupFiles> make_real_cgroup_files();

// What a run's cgroup accounted for. cpu_usec comes from cpu.stat's usage_usec, which every
// cgroup v2 has; peak_bytes from memory.peak (or memory.max_usage_in_bytes on kernels without
// it), only where the memory controller is enabled for the run's cgroup.
struct RunUsage {
  std::optional<int64_t> cpu_usec;
  std::optional<int64_t> peak_bytes;
};

// The containment in use, as `gpuq gpus` and GET /v1/health show it.
struct Containment {
  std::string kind = "marker";  // "cgroup" or "marker"
  std::string root;             // the cgroup v2 directory runs live under (kind "cgroup")
  std::string reason;           // why this kind: where the root came from, or why none is usable
};

// What the cgroup `group` accounted for (read once it is empty, before it is removed).
RunUsage read_run_usage(CgroupFiles& files, const std::string& group);

// `populated` from the text of a cgroup.events file; nullopt when the line is missing.
std::optional<bool> parse_populated(const std::string& events);
// The value of `key` in a flat-keyed file (cpu.stat, memory.stat), nullopt when absent.
std::optional<int64_t> parse_flat_key(const std::string& text, const std::string& key);

class RunCgroups {
 public:
  RunCgroups(CgroupFiles& files, std::string root) : files_(files), root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string runs_dir() const { return root_ + "/runs"; }
  // A shared box's user's runs (docs/lab.md) live under that user's parent, `<root>/users/LOGIN`,
  // where an admin may limit or read all of one user's runs at once (memory.max, cpu.weight,
  // cpu.stat); the daemon's own runs (login "") under runs_dir().
  std::string users_dir() const { return root_ + "/users"; }
  std::string parent_of(const std::string& login) const {
    return login.empty() ? runs_dir() : users_dir() + "/" + login;
  }
  std::string group_of(const std::string& run_id, const std::string& login = "") const {
    return parent_of(login) + "/" + run_id;
  }

  // Makes the tree ready for runs: `<root>/runs` and `<root>/users`, and with `controllers` the
  // ones root offers (cpu, memory) enabled for the runs and the users' parents. cgroup v2 lets a cgroup enable controllers for its
  // children only while it holds no process itself, so the processes in root (the daemon,
  // when root is its own cgroup) move first into the leaf `<root>/daemon`. Controllers that
  // cannot be enabled are skipped: cpu.stat's usage_usec and cgroup.kill need none.
  Status prepare(bool controllers = true);
  // Creates the run's cgroup (under its user's parent, made with the controllers its parent
  // offers when it is the user's first run) and moves `pid` (a shim still waiting for its go
  // byte) into it, so that everything the job starts is born inside. On failure the group is
  // removed again.
  Status place(const std::string& run_id, pid_t pid, const std::string& login = "");
  // The run's cgroup when it exists (a run started under cgroup containment): under its user's
  // parent, or under runs_dir() (the daemon's own runs, and runs of an older daemon).
  std::optional<std::string> existing_group(const std::string& run_id, const std::string& login = "");

 private:
  CgroupFiles& files_;
  std::string root_;
};

// The cgroup v2 directory of this process: the mount point of cgroup2 (from `mountinfo`) joined
// with its `0::` line of `self_cgroup`; nullopt when either is missing.
std::optional<std::string> own_cgroup_dir(const std::string& mountinfo, const std::string& self_cgroup);

// Chooses the containment. `configured` is the `[cgroup] root` setting: "off" (the marker
// sweep), a directory (which must be a writable cgroup v2 directory), or "" for automatic: the
// daemon's own cgroup when it is delegated to it (systemd's Delegate=yes sets the xattr
// trusted.delegate or user.delegate; `delegated` says whether one was found) and not the root
// of the hierarchy. `own` is own_cgroup_dir() of the daemon. A daemon that systemd started in
// `<delegated>/daemon` (DelegateSubgroup=daemon, systemd 254+) uses the delegated parent and
// enables the memory controller for runs; one started in the delegated cgroup itself enables
// none, since a restarted daemon could then not be placed there (no-internal-process rule),
// so its runs have CPU time but no peak memory.
// `delegated` is the delegated cgroup: `own`, or its parent for `<delegated>/daemon`; nullopt
// when neither carries the xattr.
Containment choose_containment(CgroupFiles& files, const std::string& configured,
                               const std::optional<std::string>& own,
                               const std::optional<std::string>& delegated);

// Whether the directory carries systemd's delegation xattr.
bool is_delegated(const std::string& dir);

// choose_containment() for this process: its own cgroup from /proc/self/mountinfo and
// /proc/self/cgroup, delegated or not. Call it before forking helpers that should move into
// the daemon's leaf with it (the spawner).
Containment detect_containment(CgroupFiles& files, const std::string& configured);

}  // namespace gpuq::runner
