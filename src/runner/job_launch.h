// SPDX-License-Identifier: Apache-2.0
// How a shim starts one process of its run (the job, a step, a step's done_if): argv and
// environment as C arrays, file actions and attributes, built before the shim forks (see
// PreparedShim), then spawned into its own process group with the log as stdout and stderr;
// as the job's user when the run is another user's (os::become_user in a forked child), or,
// for a root runtime's container step, as the shim itself with the env file on fd kEnvFileFd.
// Used by the shim alone (runner/shim.cc). Not thread-safe: one per process it starts.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "os/identity.h"
#include "runner/run_files.h"

namespace gpuq::runner {

// What posix_spawn needs to start the job, built before the shim is forked (see PreparedShim):
// the job's argv and environment as C arrays, its file actions and attributes. Only the log's
// two dup2s are added by the shim itself, once it has opened the log.
//
// A container step of a root daemon's run for another user (RunSpec::root_runtime) is the
// runtime's `run`, which runs as root: it starts with the shim's own environment (the daemon's),
// never the job's, which it gets as an env file on fd kEnvFileFd instead.
class JobLaunch {
 public:
  explicit JobLaunch(const RunSpec& spec, const std::vector<std::string>* runtime_env = nullptr)
      : JobLaunch(spec, spec.argv, {}, runtime_env) {}
  // A step's launch: its own argv and a few variables of its own (`extra_env`, which wins);
  // `runtime_env` non-null makes it a root runtime's `run` (RunSpec::root_runtime) started with
  // that environment.
  JobLaunch(const RunSpec& spec, std::vector<std::string> argv, const std::map<std::string, std::string>& extra_env,
            const std::vector<std::string>* runtime_env = nullptr);
  ~JobLaunch();
  JobLaunch(const JobLaunch&) = delete;
  JobLaunch& operator=(const JobLaunch&) = delete;

  // Starts the job in its own process group with posix_spawn, which glibc implements with
  // CLONE_VM|CLONE_VFORK: no page tables are copied, so this costs far less than fork() in a
  // process that maps as much as gpuq does. Returns the pid, or an errno.
  Result<pid_t> spawn(const RunSpec& spec, int log_fd);

 private:
  // posix_spawn cannot change a child's ids: a job of another user is forked, and its child does
  // what the spawn attributes say, then drops every privilege (os::become_user) before it enters
  // the job's directory (as the user, whose rights decide) and execs. A failure there comes back
  // as the step and its errno on a close-on-exec pipe; the job then never ran.
  Result<pid_t> spawn_as_user(const RunSpec& spec, int log_fd);
  static constexpr int kStageStdio = 1, kStageIdentity = 2, kStageDirectory = 3, kStageExec = 4;

  // The env file of a root runtime's step: NAME=VALUE lines of the variables it passes by name
  // that the step's environment has. A value with a line break cannot be one line: the step
  // fails, saying so, rather than lose or split it.
  static Result<std::string> env_file_text(const std::vector<std::string>& names,
                                           const std::map<std::string, std::string>& env);


  // The runtime's `run`, as the shim itself, with the env file on fd kEnvFileFd (a memfd,
  // which only this process and the runtime hold).
  Result<pid_t> spawn_runtime();


  // The job starts with every signal at its default disposition. An exec resets caught signals
  // itself and keeps ignored ones (nohup's SIGHUP, the shim's SIGPIPE), so resetting either set
  // below gives the job the same dispositions.
  // every_signal(): all but SIGKILL and SIGSTOP, for posix_spawn's POSIX_SPAWN_SETSIGDEF. glibc's
  // child sets each signal of that set once, where it reads and then sets each signal outside
  // it: naming only the ignored ones cost 121 sigaction calls a run, and the shim's reading of
  // them 62 more; all of them, 63 in all.
  static sigset_t every_signal();
  // ignored_signals(): the ones this process ignores, and SIGPIPE, read once per process (62
  // sigaction calls), for a fork() child (a run as another user) that resets only those: one
  // call each there, rather than one per signal for each process a run starts.
  static sigset_t ignored_signals();

  std::vector<std::string> argv_strings_;
  std::vector<std::string> env_strings_;
  std::vector<char*> envp_;
  std::vector<char*> argv_;
  std::string path_;
  std::optional<os::UserIdentity> run_as_;
  bool as_runtime_ = false;       // a root runtime's `run` (RunSpec::root_runtime)
  Result<std::string> env_file_;  // its env file's text, or why there can be none
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

}  // namespace gpuq::runner
