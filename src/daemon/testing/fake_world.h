// SPDX-License-Identifier: Apache-2.0
// A World (daemon/world.h) in memory, for unit tests of the queue actor: a virtual wall clock
// with its timers, a queue of posted work, commits through a real Store that the test can make
// fail, shims that are records a test ends when it likes (with an exit record, or none: a
// vanished shim), run directories and files in maps, and condition checks and cleanups that
// wait for the test to answer (or are answered at once, when asked). Nothing runs until the
// test calls run() or advance(), so every step is explicit and nothing sleeps.
//
// Owns its fake shims, timers' entries and files; borrows the store. Not thread-safe: the test
// and the actor share one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/world.h"
#include "store/store.h"

namespace gpuq::daemon::testing {

class FakeWorld : public World {
 public:
  // A shim as the test sees it.
  struct Shim {
    pid_t pid = 0;
    uint64_t ticks = 0;
    std::string run_dir;
    bool released = false;
    int commits_at_release = -1;  // world.commits() when released: its start's commit is before
    bool dropped = false;   // the actor let go of it without release (an aborted start)
    bool exited = false;
    std::vector<int> signals;
    std::function<void()> on_exit;
  };

  explicit FakeWorld(store::Store& store, int64_t start_ms = 1'800'000'000'000);
  ~FakeWorld() override;

  // --- driving ---
  // Runs posted work until none is left (timers that are due included).
  void run();
  // Moves the clock forward by `ms`, firing the timers due on the way in time order, each
  // followed by the work it posts.
  void advance(int64_t ms);
  int64_t now() const { return now_ms_; }

  // --- commits ---
  // After `after` more commits that work, the next `n` commits fail (and roll back) with
  // `error`; commits after them work.
  void fail_commits(int n, std::string error = "database or disk is full (injected)", int after = 0);
  int commits() const { return commits_; }
  int failed_commits() const { return failed_commits_; }

  // --- shims ---
  // Every shim launched or adopted, oldest first.
  const std::vector<std::unique_ptr<Shim>>& shims() const { return shims_; }
  Shim* shim_of(const std::string& run_dir);
  // The shim exits after writing `record` (exit.json) into its run directory.
  void exit_shim(const std::string& run_dir, runner::ExitRecord record);
  // The shim exits writing nothing (killed, or a power cut for it alone).
  void vanish_shim(const std::string& run_dir);
  // An exit record written while no daemon was watching (its shim is not alive).
  void put_exit_record(const std::string& run_dir, runner::ExitRecord record);
  // A shim that adopt_shim() finds alive, as after a daemon restart.
  void add_live_shim(pid_t pid, uint64_t ticks);
  // The next launches fail with this error (kIoError), `n` times.
  void fail_launches(int n, std::string error = "fork: Resource temporarily unavailable (injected)");
  // Reading exit records fails with an I/O error while set (e.g. out of file descriptors).
  void set_exit_records_unreadable(bool unreadable) { exit_records_unreadable_ = unreadable; }
  // The shim rewrites the run's steps.json: a watch on it hears of it (after posted work).
  void write_steps(const std::string& run_dir, std::vector<StepRun> steps);
  // How many watches are open now.
  size_t open_watches() const { return watches_.size(); }
  const std::set<std::string>& run_dirs() const { return run_dirs_; }
  const std::map<std::string, std::string>& files() const { return files_; }
  std::vector<std::pair<pid_t, uint64_t>> swept_sessions() const { return swept_; }

  // --- off-thread work ---
  struct ConditionCall {
    ConditionRequest request;
    std::function<void(ConditionResult)> done;
  };
  // Checks not answered yet, oldest first.
  std::deque<ConditionCall>& condition_calls() { return conditions_; }
  // Answers the oldest open check of `job_id`; false when there is none.
  bool answer_conditions(int64_t job_id, bool holds, bool done = false, std::string false_text = "");
  // When set, cleanups are confirmed (clean, two empty scans) as soon as they are asked for.
  void set_auto_clean(bool on) { auto_clean_ = on; }
  struct CleanupCall {
    runner::CleanupTarget target;
    std::function<void(runner::CleanupOutcome)> done;
  };
  std::deque<CleanupCall>& cleanup_calls() { return cleanups_; }
  // Answers the oldest open cleanup with `outcome` (its key set to the cleanup's) and returns
  // what it was for; fails the test when none is open.
  runner::CleanupTarget answer_cleanup(runner::CleanupOutcome outcome);
  os::FakeProcessTable& table() { return table_; }
  // Every cleanup asked for, oldest first (answered or not).
  const std::vector<runner::CleanupTarget>& cleanup_targets() const { return cleanup_targets_; }

  // --- containers ---
  // What container_runtime() answers: a docker at /usr/bin/docker unless set.
  void set_container_runtime(Result<runner::ContainerRuntime> runtime) { runtime_ = std::move(runtime); }
  // The runs whose containers stop_containers() was asked to stop, in order.
  const std::vector<std::string>& stopped_containers() const { return stopped_containers_; }
  struct ImageCall {
    ImagePrep request;
    std::function<void(ImagePrepResult)> done;
  };
  // Image checks and pulls not answered yet, oldest first.
  std::deque<ImageCall>& image_calls() { return image_calls_; }
  // Answers the oldest open image call of `job_id` (a check: `to_pull`; a pull: `to_pull`
  // ignored); an `error` fails it. False when there is none.
  bool answer_images(int64_t job_id, std::vector<std::string> to_pull = {}, std::string error = "");
  // Directories given to another user: path -> "uid:gid"; directories whose mode was set.
  const std::map<std::string, std::string>& given_dirs() const { return given_dirs_; }
  const std::map<std::string, mode_t>& dir_modes() const { return dir_modes_; }

  // --- World ---
  int64_t now_ms() override { return now_ms_; }
  std::unique_ptr<Timer> make_timer() override;
  void post(std::function<void()> fn) override { posted_.push_back(std::move(fn)); }
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
  // Every job runs as the daemon, as a daemon not run by root does.
  Result<std::optional<os::UserIdentity>> submitter_identity(const std::string&) override {
    return std::nullopt;
  }
  Status write_file(const std::string& path, const std::string& content) override;
  void remove_file(const std::string& path) override { files_.erase(path); }
  int64_t modified_ms(const std::string& path) override;
  void measure_trees(std::vector<std::string> paths, bool remove,
                     std::function<void(int64_t bytes)> done) override;
  // The trees measure_trees() removed, and the size each one reports (default 0).
  const std::vector<std::string>& removed_trees() const { return removed_trees_; }
  void set_tree_size(const std::string& path, int64_t bytes) { tree_sizes_[path] = bytes; }
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
  os::ProcessTable& processes() override { return table_; }

  // The runs' specs as written to run.json, by run directory.
  const std::map<std::string, runner::RunSpec>& run_specs() const { return run_specs_; }

 private:
  struct TimerEntry {
    int64_t at_ms = 0;
    std::function<void()> fire;
    bool armed = false;
  };
  class FakeTimer;
  class FakeShim;
  class FakeWatch;
  void exit_now(Shim& shim);

  store::Store& store_;
  int64_t now_ms_;
  std::deque<std::function<void()>> posted_;
  std::vector<std::shared_ptr<TimerEntry>> timers_;
  int fail_commits_ = 0;
  int pass_commits_ = 0;  // commits that still work before fail_commits_ begin
  std::string commit_error_;
  int commits_ = 0;
  int failed_commits_ = 0;
  std::vector<std::unique_ptr<Shim>> shims_;
  pid_t next_pid_ = 1000;
  int fail_launches_ = 0;
  std::string launch_error_;
  bool exit_records_unreadable_ = false;
  std::set<std::string> run_dirs_;
  std::map<std::string, runner::RunSpec> run_specs_;
  std::map<std::string, runner::ExitRecord> exit_records_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::vector<StepRun>> step_records_;  // by run directory
  std::map<uint64_t, std::pair<std::string, std::function<void()>>> watches_;  // id: path, callback
  uint64_t next_watch_ = 1;
  std::map<std::string, int64_t> modified_;
  std::vector<std::pair<pid_t, uint64_t>> swept_;
  std::vector<std::string> removed_trees_;
  std::map<std::string, int64_t> tree_sizes_;
  std::deque<ConditionCall> conditions_;
  std::deque<CleanupCall> cleanups_;
  bool auto_clean_ = true;
  std::vector<runner::CleanupTarget> cleanup_targets_;
  Result<runner::ContainerRuntime> runtime_ =
      runner::ContainerRuntime{runner::RuntimeKind::kDocker, "/usr/bin/docker", {}};
  std::vector<std::string> stopped_containers_;
  std::deque<ImageCall> image_calls_;
  std::map<std::string, std::string> given_dirs_;
  std::map<std::string, mode_t> dir_modes_;
  os::FakeProcessTable table_;
};

}  // namespace gpuq::daemon::testing
