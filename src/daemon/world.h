// SPDX-License-Identifier: Apache-2.0
// Everything the queue actor does outside its own memory, behind one interface: the wall clock
// and timers, work posted to its own thread, commits to the store, launching run shims and
// learning of their exits, signalling exactly those processes, the files of runs and jobs, and
// the work it hands to other threads (condition checks, cleanup sweeps, the sweep of a lost
// run's session). RealWorld (real_world.h) does these with Asio, pidfds, /proc and SQLite;
// FakeWorld (testing/fake_world.h) does them in memory on a virtual clock, so that a test drives
// the actor step by step, without processes or sleeps, and can make any commit fail.
//
// Thread rules: the actor calls every method on its own thread, and every callback given to a
// World runs later on the actor's thread (never inside the call that registered it).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "daemon/condition_checker.h"
#include "daemon/config.h"
#include "model/job.h"
#include "os/identity.h"
#include "os/process_table.h"
#include "runner/cleanup.h"
#include "runner/container_runtime.h"
#include "runner/run_files.h"

namespace gpuq::daemon {

// A one-shot timer on the wall clock. Arming again replaces the earlier arming; cancel() and
// destruction drop it. Any instant is safe: one years away neither overflows nor fires early.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void arm(int64_t at_ms, std::function<void()> fire) = 0;
  virtual void cancel() = 0;
};

// A run's shim: one process, known by pid and start time. Signals reach exactly that process
// (through a pidfd held since it was launched or adopted), never a later process with its pid.
class ShimProcess {
 public:
  virtual ~ShimProcess() = default;
  virtual pid_t pid() const = 0;
  virtual uint64_t start_ticks() const = 0;
  // Lets a just-launched shim start its job: call it only once the run is on record. A shim
  // dropped without release() exits without running anything.
  virtual Status release() = 0;
  // kGone once the shim has exited.
  virtual os::SignalResult signal(int sig) = 0;
  // Calls `exited` once, when the shim has exited (at once if it already has).
  virtual void on_exit(std::function<void()> exited) = 0;
};

// A watch on one file (World::watch_file); dropping it ends the watch, and its callback is not
// called after that.
class FileWatch {
 public:
  virtual ~FileWatch() = default;
};

// The images of a container job made ready before it takes GPUs (World::prepare_images).
struct ImagePrep {
  int64_t job_id = 0;
  uint64_t seq = 0;  // the caller's name for this request; its result carries it
  runner::ContainerRuntime runtime;
  std::vector<std::string> images;
  PullPolicy policy = PullPolicy::kMissing;
  bool pull = false;     // false: find which to pull; true: pull `images`
  std::string log_path;  // a pull's progress is appended here
  std::string user;      // the job's user: on a shared box the pull's log is theirs to read
};
struct ImagePrepResult {
  int64_t job_id = 0;
  uint64_t seq = 0;
  bool ok = false;
  std::string error;                 // the runtime's message when !ok
  std::vector<std::string> to_pull;  // a check: the images that must be pulled
};

class World {
 public:
  virtual ~World() = default;

  // --- time and the actor's thread ---
  virtual int64_t now_ms() = 0;  // the wall clock, ms since the epoch
  virtual std::unique_ptr<Timer> make_timer() = 0;
  virtual void post(std::function<void()> fn) = 0;  // runs fn after the current handler

  // --- the store ---
  // Runs `writes` (the actor's calls of the store's write methods) in one transaction: all of
  // them land, or none (the error says why: a full disk, an I/O error).
  virtual Status commit(const std::function<Status()>& writes) = 0;

  // --- runs ---
  // Creates the run directory, which must not exist yet (a run directory is never reused), and
  // writes its run.json. kConflict when the directory exists.
  // With spec.run_as, the job directory becomes that user's (0700); the run directory stays the
  // daemon's until its shim gives it to the user (runner/run_files.h).
  virtual Status create_run_dir(const std::string& run_dir, const runner::RunSpec& spec) = 0;
  // Who the job of `login` (JobSpec::user) runs as: nullopt for the daemon itself (a daemon not
  // run by root, root's own jobs, an older job without a user); kNotFound naming the login when
  // it should run as a user the machine no longer has, and must then not run at all.
  virtual Result<std::optional<os::UserIdentity>> submitter_identity(const std::string& login) = 0;
  // Starts the run's shim; it waits for ShimProcess::release(). Under cgroup containment the
  // shim is in the run's own cgroup (named by `run_id`, the run's marker) before that, under
  // the parent of `cgroup_user`: the login a job runs as on a shared box, "" for the daemon's.
  virtual Result<std::unique_ptr<ShimProcess>> launch_shim(const std::string& run_dir,
                                                           const std::string& run_id,
                                                           const std::string& cgroup_user) = 0;
  // The shim of a run recorded earlier, if that very process (pid and start ticks) still runs:
  // kNotFound when it is gone, another error when that cannot be told now (out of fds).
  virtual Result<std::unique_ptr<ShimProcess>> adopt_shim(pid_t pid, uint64_t start_ticks) = 0;
  // The run's exit.json: kNotFound when the shim wrote none; another error when it cannot be
  // read now (which says nothing about whether the run ended).
  virtual Result<runner::ExitRecord> read_exit_record(const std::string& run_dir) = 0;
  // A job with steps: the run's steps.json (kNotFound before its first step began).
  virtual Result<std::vector<StepRun>> read_step_record(const std::string& run_dir) = 0;
  // Calls `changed` each time the file at `path` is written or moved into place (several
  // changes may come as one call). Fails when it cannot be watched; the caller then learns
  // what changed later (a run's steps at its end).
  virtual Result<std::unique_ptr<FileWatch>> watch_file(const std::string& path,
                                                        std::function<void()> changed) = 0;
  // Kills, on another thread, what is left of the session of a shim that vanished (pid
  // `session`, started at `shim_start_ticks`): every process of that session that started no
  // earlier than the shim, each signalled only after its identity was checked. `done` gets how
  // many processes were killed.
  virtual void sweep_session(pid_t session, uint64_t shim_start_ticks,
                             std::function<void(int killed)> done) = 0;

  // --- files ---
  // A job's directory and its script snapshots ({path, text}: runner::script_snapshots); nothing
  // for a command (no scripts), whose directory is made with its first run.
  // Made as the daemon's and given to `login` (with the snapshots) once written, when its jobs
  // run as their submitter.
  virtual Status write_job_dir(const std::string& job_dir,
                               const std::vector<std::pair<std::string, std::string>>& scripts,
                               const std::string& login) = 0;
  // The yield request a running job finds at $GPUQ_YIELD_FILE; remove_file() withdraws it.
  virtual Status write_file(const std::string& path, const std::string& content) = 0;
  virtual void remove_file(const std::string& path) = 0;
  // When the file last changed (ms since the epoch); 0 when it does not exist.
  virtual int64_t modified_ms(const std::string& path) = 0;
  // On another thread: the bytes the trees at `paths` hold, and when `remove` is set, removes
  // them (pruned jobs' directories). `done` gets the bytes (freed, or that would be freed).
  virtual void measure_trees(std::vector<std::string> paths, bool remove,
                             std::function<void(int64_t bytes)> done) = 0;

  // --- work on other threads ---
  virtual void check_conditions(ConditionRequest request,
                                std::function<void(ConditionResult)> done) = 0;
  // Cleans up after an ended run: by its cgroup where it has one (runner/cgroup_cleanup.h),
  // else by the marker sweep (runner/cleanup.h).
  virtual void clean_up(runner::CleanupTarget target,
                        std::function<void(runner::CleanupOutcome)> done) = 0;
  // --- containers (docs/containers.md) ---
  // The runtime `config` names, found on the daemon's PATH.
  virtual Result<runner::ContainerRuntime> container_runtime(const ContainersConfig& config) = 0;
  // On another thread: stops every container of run `run_id` (stop -t GRACE, then kill). Its
  // result is not reported: the run's cleanup confirms that none is left.
  virtual void stop_containers(runner::ContainerRuntime runtime, std::string run_id,
                               int64_t grace_ms) = 0;
  // On another thread: which of a job's images must be pulled, or their pull (one pull at a
  // time, beside checks and stops).
  virtual void prepare_images(ImagePrep request, std::function<void(ImagePrepResult)> done) = 0;
  // Gives the directory `path` (not what is in it) to uid:gid: a container job's user that is
  // not the daemon's then writes its run directory.
  virtual Status give_dir(const std::string& path, uid_t uid, gid_t gid) = 0;
  // Sets the directory's mode (a container job's directory, readable by its user).
  virtual Status set_dir_mode(const std::string& path, mode_t mode) = 0;

  // The process table, for telling runs' GPU processes from foreign ones (actor thread only).
  virtual os::ProcessTable& processes() = 0;
};

}  // namespace gpuq::daemon
