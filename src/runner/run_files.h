// SPDX-License-Identifier: Apache-2.0
// The files through which the daemon and a run's shim talk, all inside the run directory:
//   run.json   what to run (written by the daemon before the shim starts)
//   exit.json  how the run ended (written atomically by the shim, once, at the very end)
//   output.log the job's stdout and stderr, appended
//   steps.json a job with steps: what each step of this run did so far (rewritten atomically
//              by the shim at each step's start and end; exit.json has the last of it)
// Because these outlive both processes, a restarted daemon can learn how a run ended while it
// was down. All are 0600 in a 0700 run directory: they hold the job's environment and
// output. Pure encoding plus file reads and writes; thread-safe.
//
// A run of another user (RunSpec::run_as) has its run directory and output.log given to that
// user by the shim, which stays root. So no record is trusted by path: run.json is written before
// the directory is given away, exit.json and steps.json through the run directory's fd, and
// every read refuses a link anywhere below the jobs directory, anything but a regular file,
// a file the reader's euid does not own (one the user made) and an oversized one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include "base/status.h"
#include "model/step.h"
#include "os/identity.h"

namespace gpuq::runner {

struct RunSpec {
  std::vector<std::string> argv;           // argv[0] is looked up in env's PATH; unused with steps
  std::map<std::string, std::string> env;  // the complete environment of the job
  std::string cwd;
  int64_t kill_grace_ms = 10'000;          // SIGTERM to SIGKILL, for stops and leftovers
  int64_t max_log_bytes = 0;               // output.log is cut there (a line says so); 0: no cap
  // The job's umask: the one the daemon was started with. The daemon and the shim run under 077
  // (their files are private); the job must not, or everything it writes would be too. A
  // run.json without it (an older daemon's) means 022.
  mode_t umask = 022;
  // A fleet run's claim deadline file (model/claim_deadline.h): the shim stops the run once the
  // deadline in it has passed unrenewed. "" (local jobs, an older daemon's run.json): none.
  std::string claim_deadline_file;
  // A job with steps: run in order from `first_step` (the ones before it are done), each with
  // GPUQ_STEP_INDEX and GPUQ_STEP_COUNT, GPUQ_RESUME as `env` has it for the first one run and
  // 0 for the others. Empty: the run is `argv`.
  std::vector<StepSpec> steps;
  int first_step = 0;
  // Set when the job runs as its submitter (os::runs_as_submitter): the job's processes run with
  // this uid, gid and the login's groups (looked up by the daemon as it writes run.json), and HOME, USER,
  // LOGNAME and SHELL from it; the run directory and output.log become the user's. Unset: the
  // job runs as the shim, as it always did.
  std::optional<os::UserIdentity> run_as;
  // Why the job cannot run as its submitter (the user no longer exists): the shim runs nothing
  // and its exit record says this.
  std::string run_as_error;
  // With run_as, the steps that run in containers (runner/container_run_spec.h): their argv is
  // `RUNTIME run`, which runs as root (the daemon's images, containers and cleanup are root's)
  // and so must get nothing of the job: the shim starts it as itself with its own environment
  // (the daemon's), and gives it the variables named in `env_file` (their values from the step's
  // environment) as an env file on fd runner::kEnvFileFd. Unset: every step runs as run_as says.
  struct RootRuntime {
    std::vector<int> steps;             // their indices (0 for a job without steps)
    std::vector<std::string> env_file;  // the variables it passes by name
  };
  std::optional<RootRuntime> root_runtime;
};

struct ExitRecord {
  std::optional<int> exit_code;   // set when the job's main process exited
  std::optional<int> signal;      // set when it was killed by a signal
  int64_t started_at_ms = 0;
  int64_t ended_at_ms = 0;
  bool stop_requested = false;    // the shim was asked to stop the run (cancel, timeout,
                                  // preemption) while the job's main process still ran
  int leftovers_killed = 0;       // processes still in the group after the main one exited
  int job_pid = 0;                // the job's main process, also its process group id
  std::string error;              // why the job could not be started, if it could not
  // The run's disk was full while it ran (or when the shim wrote this record): the job's own
  // writes to output.log may have failed, so the log may lack output.
  bool disk_full = false;
  int64_t log_dropped_bytes = 0;  // output.log passed max_log_bytes: at least this much dropped
  // False when the daemon never let the shim go (its go pipe closed unwritten: it died after
  // recording the start, or it never recorded it): the job never ran, nothing else is set.
  bool released = true;
  // Set when the shim stopped the run itself because its fleet claim was not renewed in time
  // (RunSpec::claim_deadline_file): for people, e.g. "its fleet claim was not renewed by ...".
  std::string claim_lapsed;
  // A job with steps: what each step of this run did, from RunSpec::first_step on (steps not
  // reached are kPending). exit_code and signal are the last step's that ran.
  std::vector<StepRun> steps;
};

std::string run_spec_path(const std::string& run_dir);
std::string exit_record_path(const std::string& run_dir);
std::string log_path(const std::string& run_dir);
std::string steps_path(const std::string& run_dir);

// Writes run.json in place: only into a fresh run directory, before its shim is launched.
Status write_run_spec(const std::string& run_dir, const RunSpec& spec);
// The same through the new run directory's fd.
Status write_run_spec_at(int run_dir_fd, const RunSpec& spec);
Result<RunSpec> read_run_spec(const std::string& run_dir);
Status write_exit_record(const std::string& run_dir, const ExitRecord& record);
// The same through the run directory's fd (the shim's way; the name is only for messages).
Status write_exit_record_at(int run_dir_fd, const ExitRecord& record);
// NotFound when the shim has not written one (still running, or it died); any other error
// (unreadable, corrupt) says nothing about whether the run ended.
Result<ExitRecord> read_exit_record(const std::string& run_dir);
// steps.json: written atomically (fsynced) by the shim; NotFound before the first step began.
Status write_step_record(const std::string& run_dir, const std::vector<StepRun>& steps);
Status write_step_record_at(int run_dir_fd, const std::vector<StepRun>& steps);
Result<std::vector<StepRun>> read_step_record(const std::string& run_dir);

}  // namespace gpuq::runner
