// SPDX-License-Identifier: Apache-2.0
// The cleanup sweep of DESIGN.md §3 ("Release a GPU by cleaning up, not by hoping"). After a
// run ends, its shim has emptied the job's process group, but processes that called setsid
// (a vLLM EngineCore, a llama-server) escaped it. They still carry the run's GPUQ_RUN_ID in
// their environment: the sweep finds them by that marker, sends SIGTERM (and SIGCONT), then
// SIGKILL once the grace has passed, and confirms the run clean after two consecutive scans,
// at least a poll apart, that find none of its processes. A cleanup that cannot be confirmed
// within the limit finishes unconfirmed, naming what is left (the daemon then puts the GPU in
// attention).
//
// Rules of a scan (one /proc scan serves every pending cleanup):
//  - facts are read before the environment, so most processes cost one read: zombies, kernel
//    threads (pid 2 and children of pid 2), processes older than every pending run, and
//    processes of another uid (unless the sweep runs as root) are skipped without reading
//    their environment;
//  - GPUQ_RUN_ID is looked up in one map of all pending runs; a process that started before
//    its run's started_ticks is never touched, even with the marker;
//  - every signal goes through ProcessTable::signal with the start ticks seen by the scan;
//  - a process listed by the scan that vanished before it could be ruled out (its facts could
//    not be read, or it ended while its environment was read) makes the scan not count toward
//    confirming the runs it could belong to: the process might have forked a marked child that
//    this scan could not list. Such a scan neither counts nor breaks a run of empty scans;
//  - at most one scan per poll_ms; the first cleanup added to an idle sweep is scanned at once;
//  - a process the previous scan read, older than every pending run, is not read again when
//    its pid cannot have been given to a new process since: the table's last pid (read before
//    each listing) has not wrapped, the pid is not among those given between the two readings,
//    and the previous scan was at most kKnownStartsMs ago (far less time than the kernel needs
//    to give out every pid and come round again). Pids are given in increasing order, so such
//    a process is the one read before. On a busy machine most processes are old: a scan then
//    reads only the few new ones (100 trivial runs: 4,136 opens instead of 10,236, and ~5%
//    less of the daemon's own CPU per run).
// Why two scans: a process forked after a scan listed the pids is missed by that scan, and one
// caught in the middle of an exec shows an empty environment for a moment; the next scan sees
// either.
//
// A state machine over a ProcessTable and explicit times in milliseconds: no clock, no sleep,
// no threads (Cleaner drives one over the real clock). Owns its pending cleanups; borrows the
// table, which must outlive it. Not thread-safe: one thread calls everything.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "os/process_table.h"
#include "runner/cgroup.h"
#include "runner/container_runtime.h"

namespace gpuq::runner {

// The environment variable that marks every process of a run.
inline constexpr const char* kRunMarkerVariable = "GPUQ_RUN_ID";

struct CleanupLimits {
  int64_t poll_ms = 50;       // between scans
  int64_t grace_ms = 10'000;  // from SIGTERM to SIGKILL (and between repeated SIGKILLs)
  int64_t limit_ms = 60'000;  // from add() to giving up unconfirmed
};

struct CleanupTarget {
  int64_t key = 0;             // the caller's name for this cleanup (e.g. the run's id)
  std::string run_id;          // the GPUQ_RUN_ID value
  uint64_t started_ticks = 0;  // processes started before this are never touched
  // A run of a container job: its containers are found by its label and removed too, by this
  // runtime (container_commands.h), after its processes; their processes may live outside the
  // run's cgroup and session. Unset for other runs.
  std::optional<ContainerRuntime> containers;
  // The login whose runs' parent cgroup holds the run's (cgroup.h): a shared box's user; "" for
  // the daemon's own runs.
  std::string cgroup_user;
};

struct StrayProcess {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  uid_t uid = 0;
  std::string user;
  std::string cmdline;
};

struct CleanupOutcome {
  int64_t key = 0;
  bool confirmed = false;               // two consecutive empty scans a poll apart
  std::vector<StrayProcess> killed;     // marked processes found and signalled (first 100)
  int killed_total = 0;                 // how many were, also past the first 100
  std::vector<StrayProcess> remaining;  // when !confirmed: still there at the limit
  int scans = 0;                        // scans this cleanup took part in
  // Under cgroup containment (cgroup_cleanup.h): what the run's cgroup accounted for, read
  // once it was empty. Empty for the marker sweep.
  RunUsage usage;
  bool by_cgroup = false;               // confirmed (or not) by the run's cgroup, not a sweep
  // A container job's run: the containers found by its label and removed, those still listed
  // at the cleanup limit (then it is not confirmed), and the runtime's word on them.
  std::vector<std::string> containers_removed;
  std::vector<std::string> containers_left;
  std::string containers_message;
};

// The uid whose processes a sweep may examine: nullopt (all) when running as root, else our
// effective uid (the environment of another user's process is unreadable anyway).
std::optional<uid_t> default_sweep_uid();

class CleanupSweep {
 public:
  static constexpr size_t kMaxListed = 100;
  // How long what a scan learnt about old processes stays good for the next scan.
  static constexpr int64_t kKnownStartsMs = 100;

  CleanupSweep(os::ProcessTable& table, CleanupLimits limits,
               std::optional<uid_t> only_uid = default_sweep_uid());

  // Begins a cleanup. Its first scan is due at once if no scan happened in the last poll_ms,
  // else with the next scan.
  void add(CleanupTarget target, int64_t now_ms);
  bool idle() const { return targets_.empty(); }
  size_t pending() const { return targets_.size(); }
  // When step() next has work; meaningful when !idle().
  int64_t next_scan_ms() const;
  // Does one batched scan if one is due, sends the signals that are due, and returns the
  // cleanups that finished (confirmed, or gave up at the limit).
  std::vector<CleanupOutcome> step(int64_t now_ms);

 private:
  struct Tracked {
    StrayProcess process;
    int64_t last_signal_ms = 0;  // when SIGTERM, then each SIGKILL, was sent
    bool killed = false;         // SIGKILL sent at least once
    bool gone = false;           // the last signal found it gone
  };
  struct Pending {
    CleanupTarget target;
    int64_t added_ms = 0;
    int64_t deadline_ms = 0;
    int empty_scans = 0;                                    // consecutive empty scans that count
    int64_t last_empty_ms = 0;                              // time of the latest of them
    std::map<std::pair<pid_t, uint64_t>, Tracked> tracked;  // seen in the latest scan
    CleanupOutcome outcome;
  };
  struct Found {
    size_t target;
    os::ProcessFacts facts;
  };

  // Lists and reads the table; fills `found` and marks the targets a vanished process taints.
  void scan(std::vector<Found>& found, std::vector<bool>& tainted, int64_t now_ms);
  void signal_found(Pending& pending, const std::vector<const os::ProcessFacts*>& mine,
                    int64_t now_ms);
  StrayProcess describe(const os::ProcessFacts& facts);
  const std::string& user(uid_t uid);

  os::ProcessTable& table_;
  CleanupLimits limits_;
  std::optional<uid_t> only_uid_;
  std::vector<Pending> targets_;
  std::optional<int64_t> last_scan_ms_;
  std::map<uid_t, std::string> users_;
  // What the latest scan learnt, so that the next one reads only processes that may be new:
  // the start ticks of every process it read or kept, and the table's last pid before it
  // listed them (see scan()).
  std::unordered_map<pid_t, uint64_t> known_starts_;
  std::optional<pid_t> known_last_pid_;
  int64_t known_at_ms_ = 0;
};

}  // namespace gpuq::runner
