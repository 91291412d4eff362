// SPDX-License-Identifier: Apache-2.0
// The process table behind an interface, so that the cleanup sweep and the ownership of GPU
// processes can be tested without real processes: list pids, read a process's facts (parent,
// start ticks, owner, zombie), one variable of its environment and its command line, and
// signal it only while it is still the process that started at the given start ticks.
//
// make_linux_process_table() reads /proc and signals through pidfds; FakeProcessTable (for
// tests) holds processes in memory, records the signals sent, and has hooks that run inside
// facts()/env_value() to model processes that fork or vanish in the middle of a scan.
//
// Owns nothing between calls (the Linux table opens and closes its files in each call).
// Thread rules: the Linux table is stateless and may be used from any number of threads; a
// FakeProcessTable is not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::os {

// What /proc/PID/stat says about a process. Where /proc hides other users' processes
// (hidepid=1), such a process shows only pid and uid, with ppid 0 and start_ticks 0.
struct ProcessFacts {
  pid_t pid = 0;
  pid_t ppid = 0;
  uint64_t start_ticks = 0;  // clock ticks since boot (field 22 of /proc/PID/stat)
  uid_t uid = 0;             // the owner of /proc/PID (its effective uid while dumpable)
  bool zombie = false;       // exited (Z or X), not yet reaped
  pid_t session = 0;         // its session id (field 6)
};

enum class SignalResult {
  kSent,
  kGone,    // vanished, a zombie, or the pid was reused (start ticks differ)
  kDenied,  // the process exists but we may not signal it
};

class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  // Every pid listed now. A process that exists for the whole call is listed; one that starts
  // or ends during it may or may not be.
  virtual std::vector<pid_t> pids() = 0;
  // nullopt: vanished (or never existed).
  virtual std::optional<ProcessFacts> facts(pid_t pid) = 0;
  // The value of `name` in the process's environment (the one it was exec'd with); nullopt
  // when absent, unreadable, or vanished.
  virtual std::optional<std::string> env_value(pid_t pid, std::string_view name) = 0;
  // The arguments joined by spaces ("[comm]" for a process without any); "" if gone.
  virtual std::string cmdline(pid_t pid) = 0;
  // Signals pid only if it is still the process that started at start_ticks. The Linux table
  // opens a pidfd first, then checks the start ticks, then signals through the pidfd, so a
  // reused pid can never be hit.
  virtual SignalResult signal(pid_t pid, uint64_t start_ticks, int sig) = 0;
  // The last pid the kernel gave a new process in this pid namespace (ns_last_pid); nullopt
  // when it cannot be read. Pids are given in increasing order until they wrap at pid_max, so
  // a process whose pid was not given between two readings, and that was there at the first,
  // is the same process at the second (runner/cleanup.h uses this to read fewer processes).
  virtual std::optional<pid_t> last_pid() { return std::nullopt; }
};

// The real one, over /proc. Per process, facts() is one read of /proc/PID/stat (its owner comes
// from fstat of the same file) and env_value() one read of /proc/PID/environ; last_pid() reads
// /proc/sys/kernel/ns_last_pid.
std::unique_ptr<ProcessTable> make_linux_process_table();

// The login name of `uid` (getpwuid_r), or the number as text when it has none.
std::string user_name(uid_t uid);

// An in-memory process table for tests. Signals take effect at once: a process that does not
// survive a signal is removed; SIGCONT, SIGSTOP and 0 never end one.
class FakeProcessTable : public ProcessTable {
 public:
  struct Process {
    ProcessFacts facts;
    std::map<std::string, std::string, std::less<>> env;
    std::string cmdline;
    bool ignores_term = false;  // survives SIGTERM (SIGKILL still ends it)
    bool unkillable = false;    // survives every signal (e.g. stuck in a driver call)
    bool deny_signals = false;  // signal() answers kDenied
    bool env_unreadable = false;
  };
  struct Sent {
    pid_t pid;
    uint64_t start_ticks;
    int sig;
  };

  // Adds `process`, replacing any process with the same pid (a reused pid).
  void add(Process process);
  // A process with the marker GPUQ_RUN_ID=run_id ("" for none) and the given facts.
  void add(pid_t pid, pid_t ppid, uint64_t start_ticks, uid_t uid, std::string run_id,
           std::string cmdline = "");
  void remove(pid_t pid);
  bool has(pid_t pid) const { return processes_.count(pid) != 0; }
  Process* find(pid_t pid);

  const std::vector<Sent>& sent() const { return sent_; }
  // The signals sent to pid, in order.
  std::vector<int> signals_to(pid_t pid) const;
  int env_reads(pid_t pid) const;
  int facts_reads(pid_t pid) const;
  int scans() const { return scans_; }  // calls of pids()
  // What last_pid() answers: a test sets it as it adds processes (nullopt: unknown).
  std::optional<pid_t> last_pid_value;

  // Run at the start of facts(pid) / env_value(pid) / signal(pid), before the table is read:
  // a test may add or remove processes there to model a fork, an exit or a reused pid in the
  // middle of a scan.
  std::function<void(pid_t)> on_facts;
  std::function<void(pid_t)> on_env;
  std::function<void(pid_t)> on_signal;

  std::vector<pid_t> pids() override;
  std::optional<ProcessFacts> facts(pid_t pid) override;
  std::optional<std::string> env_value(pid_t pid, std::string_view name) override;
  std::string cmdline(pid_t pid) override;
  SignalResult signal(pid_t pid, uint64_t start_ticks, int sig) override;
  std::optional<pid_t> last_pid() override { return last_pid_value; }

 private:
  std::map<pid_t, Process> processes_;
  std::vector<Sent> sent_;
  std::map<pid_t, int> env_reads_;
  std::map<pid_t, int> facts_reads_;
  int scans_ = 0;
};

}  // namespace gpuq::os
