// SPDX-License-Identifier: Apache-2.0
// The queue actor's World (world.h) on a real machine: the system clock and Asio timers on the
// actor's io_context, SQLite transactions of the daemon's store, shims launched (gpuq-shim by
// posix_spawn, one kept started ahead of the next run, else through the spawner) and watched and signalled through pidfds, and reaped
// when they are this process's children, run files on disk (run.json with the job's user's
// groups, so the shim looks nobody up), condition
// checks on the ConditionChecker's threads, cleanup sweeps on the Cleaner's thread, and the
// sweeps of lost runs' sessions and the removal of pruned jobs' directories on a worker thread,
// and the container runtime's commands (stops, image checks, cleanup by label, pulls) on
// workers of their own, so a long pull never delays a stop.
//
// Owns those threads (the destructor stops and joins them; callbacks not yet delivered are
// dropped) and borrows the io_context, the store and the spawner, which must outlive it.
// Thread rules: as World; construct and destroy on the actor's thread while the io_context is
// not running callbacks of this world.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/asio.h"
#include "base/serial_worker.h"
#include "daemon/file_watcher.h"
#include "daemon/world.h"
#include "runner/cgroup.h"
#include "runner/cgroup_cleaner.h"
#include "runner/cleaner.h"
#include "runner/spare_shim.h"
#include "runner/spawner.h"
#include "store/store.h"

namespace gpuq::daemon {

struct RealWorldOptions {
  std::string shim_executable;             // gpuq-shim (or gpuqd), run as `EXECUTABLE shim RUN_DIR 3` (a spare: `shim - 3`)
  runner::ShimSpawner* spawner = nullptr;  // forks shims when there is no gpuq-shim; null: exec shim_executable
  runner::CleanupLimits cleanup;           // the Cleaner's poll, grace and limit
  // Where runs are contained (runner/cgroup.h): kind "cgroup" puts each run in its own cgroup
  // under root and cleans up by it; "marker" sweeps /proc for the run's marker.
  runner::Containment containment;
  int condition_threads = 2;
  // Without a spawner: this many shims are kept started ahead of the next runs
  // (runner/spare_shim.h), from the first start on; 0: none. The daemon keeps one per GPU (at
  // most 8), so that a burst of starts onto idle GPUs spawns none while the spares are young
  // (after a quiet spell, one is kept young: see RealWorld::kSparesRenewedWhileIdle).
  size_t spare_shims = 1;
  int64_t spare_max_age_ms = runner::SpareShim::kMaxAgeMs;  // tests shorten it
};

class RealWorld : public World {
 public:
  RealWorld(boost::asio::io_context& actor, store::Store& store, RealWorldOptions options);
  ~RealWorld() override;
  RealWorld(const RealWorld&) = delete;
  RealWorld& operator=(const RealWorld&) = delete;

  int64_t now_ms() override;
  std::unique_ptr<Timer> make_timer() override;
  void post(std::function<void()> fn) override;
  Status commit(const std::function<Status()>& writes) override;
  Status create_run_dir(const std::string& run_dir, const runner::RunSpec& spec) override;
  Result<std::unique_ptr<ShimProcess>> launch_shim(const std::string& run_dir,
                                                   const std::string& run_id,
                                                   const std::string& cgroup_user) override;
  Result<std::unique_ptr<ShimProcess>> adopt_shim(pid_t pid, uint64_t start_ticks) override;
  Result<runner::ExitRecord> read_exit_record(const std::string& run_dir) override;
  Result<std::vector<StepRun>> read_step_record(const std::string& run_dir) override;
  Result<std::unique_ptr<FileWatch>> watch_file(const std::string& path,
                                                std::function<void()> changed) override;
  void sweep_session(pid_t session, uint64_t shim_start_ticks,
                     std::function<void(int killed)> done) override;
  Status write_job_dir(const std::string& job_dir,
                       const std::vector<std::pair<std::string, std::string>>& scripts,
                       const std::string& login) override;
  Result<std::optional<os::UserIdentity>> submitter_identity(const std::string& login) override;
  Status write_file(const std::string& path, const std::string& content) override;
  void remove_file(const std::string& path) override;
  int64_t modified_ms(const std::string& path) override;
  void measure_trees(std::vector<std::string> paths, bool remove,
                     std::function<void(int64_t bytes)> done) override;
  void check_conditions(ConditionRequest request,
                        std::function<void(ConditionResult)> done) override;
  void clean_up(runner::CleanupTarget target,
                std::function<void(runner::CleanupOutcome)> done) override;
  Result<runner::ContainerRuntime> container_runtime(const ContainersConfig& config) override;
  void stop_containers(runner::ContainerRuntime runtime, std::string run_id,
                       int64_t grace_ms) override;
  void prepare_images(ImagePrep request, std::function<void(ImagePrepResult)> done) override;
  Status give_dir(const std::string& path, uid_t uid, gid_t gid) override;
  Status set_dir_mode(const std::string& path, mode_t mode) override;
  os::ProcessTable& processes() override { return *processes_; }
  // The containment in use: the options' one, or "marker" when its cgroup cleaner could not
  // start (the reason says why).
  const runner::Containment& containment() const { return options_.containment; }
  // The shim waiting for the next start (runner/spare_shim.h); 0 when there is none.
  pid_t spare_shim_pid() const;
  // How many spare shims wait.
  size_t spare_shims_waiting() const { return spare_shim_ ? spare_shim_->waiting() : 0; }
  // How many spares are being started (spawned, not yet kept or given up).
  size_t spare_shims_starting() const { return spare_refills_in_flight_; }

 private:
  // On the container cleanup worker: the run's containers removed by label within the cleanup
  // limit, what was found added to `outcome` (not confirmed when some are left).
  void add_container_cleanup(const runner::ContainerRuntime& runtime, const std::string& run_id,
                             runner::CleanupOutcome& outcome);
  // On the pull worker: the pull's log opened for appending (made as the job's user's), or -1
  // when it cannot be kept (daemon.log says why; the pull goes on without it).
  int open_pull_log(const ImagePrep& request);
  // The spare shim assigned `run_dir` and watched; null when there is none to take.
  std::unique_ptr<ShimProcess> take_spare_shim(const std::string& run_dir);
  // New spares until `target` (at most the capacity) wait, started on spare_worker_ and kept by
  // the actor (never on a start's path).
  void refill_spare_shim_later(size_t target = SIZE_MAX);
  // One spare started on spare_worker_ and handed to keep_spare on the actor.
  void start_spare_later();
  // The spares set aside (too old, dead) killed and reaped on spare_worker_.
  void drop_retired_spares();
  // While nothing starts, a spare is replaced this long before it would be too old to hand out
  // (a quarter of the maximum age): the start after a quiet spell takes a young spare instead
  // of spawning its shim on the actor. The replacement is started first and the aging spares
  // set aside when it arrives. Once a burst's spares have aged out, only
  // kSparesRenewedWhileIdle are kept young, so an idle daemon spawns one shim every 7.5 s.
  static constexpr size_t kSparesRenewedWhileIdle = 1;
  static constexpr int64_t kShortestRenewedSpareAgeMs = 100;
  int64_t spare_renewal_lead_ms() const;
  // spare_renewal_ set for when the oldest waiting spare will need replacing; cancelled when
  // none waits.
  void arm_spare_renewal();
  void arm_spare_renewal_in(int64_t ms);
  void renew_spares();
  // A refill's spare arrived on the actor (or could not be started): kept, aging ones set aside.
  void keep_spare(Result<runner::SpareShim::Started>& started);
  boost::asio::io_context& actor_;
  store::Store& store_;
  RealWorldOptions options_;
  std::unique_ptr<os::ProcessTable> processes_;
  ConditionChecker checker_;
  FileWatcher file_watcher_;
  // The container runtime's work (real_world_containers.cc): stops; image checks; cleanups by
  // label; pulls, one at a time. Before the cleaners, whose threads hand them cleanups: they stop
  // after those threads have. A pull under way ends at once when the destructor writes to
  // pull_cancel_.
  struct CancelPipe {
    int read = -1;
    int write = -1;
    CancelPipe();
    ~CancelPipe();
    CancelPipe(const CancelPipe&) = delete;
    CancelPipe& operator=(const CancelPipe&) = delete;
  };
  CancelPipe pull_cancel_;
  SerialWorker container_stop_worker_;
  SerialWorker image_check_worker_;
  SerialWorker container_cleanup_worker_;
  SerialWorker pull_worker_;
  runner::Cleaner cleaner_;
  // Under cgroup containment: the runs' cgroups and their cleaner (null otherwise).
  std::unique_ptr<runner::CgroupFiles> cgroup_files_ = runner::make_real_cgroup_files();
  std::unique_ptr<runner::RunCgroups> cgroups_;
  std::unique_ptr<runner::CgroupCleaner> cgroup_cleaner_;
  std::unique_ptr<runner::SpareShim> spare_shim_;  // null with a spawner
  size_t spare_refills_in_flight_ = 0;  // spares being started for spare_shim_
  boost::asio::steady_timer spare_renewal_{actor_};  // renew_spares() when a spare ages
  // Starts the spares (runner::SpareShim::start), off the actor. It stops before spare_shim_ is
  // destroyed; a spare it started for a world that is going away is killed and reaped.
  SerialWorker spare_worker_;
  // Cleared by the destructor before the threads stop: late results are dropped, not posted to
  // an actor that is going away.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  // Last, so it stops first (the running task is waited for): the sweeps of lost sessions and
  // pruned trees.
  SerialWorker worker_;
};

}  // namespace gpuq::daemon
