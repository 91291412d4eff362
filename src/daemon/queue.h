// The queue actor: the one owner of every state change in a daemon. It keeps the jobs that
// are not finished in memory (ActiveJob), decides each pass which pending jobs are ready
// (dependencies, not-before and retry times, external conditions checked off-thread), asks the
// pure scheduler which ready jobs start where, launches runs through their shims, and writes
// every transition together with its event in one store transaction. It is woken by commands
// (posted by the API), shim exits (pidfds), condition-check results and one timer for the
// earliest time-based wake-up (not-before, retry delays, condition rechecks, run timeouts) —
// never by a polling loop.
//
// Thread rules: every method except waits() runs on the actor's io_context thread. waits()
// returns an immutable snapshot under a mutex; the event listener is called on the actor
// thread after each commit and must not block.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/asio.h"
#include "base/paths.h"
#include "daemon/active_job.h"
#include "daemon/condition_checker.h"
#include "daemon/config.h"
#include "daemon/readiness.h"
#include "gpu/discovery.h"
#include "model/job.h"
#include "runner/spawner.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace gpuq::daemon {

struct QueueOptions {
  HomeLayout layout;
  std::string shim_executable;             // the gpuq binary, run as `gpuq shim`
  runner::ShimSpawner* spawner = nullptr;  // forks shims cheaply; when null, exec the binary
};

// What a submit produced: the job, and whether it already existed (same name, same spec).
struct Submitted {
  Job job;
  bool existing = false;
};

struct PlanReservation {
  std::string name;
  std::vector<int> gpus;  // device indices
  std::vector<std::string> jobs;
};

struct PlanRequest {
  std::vector<JobSpec> jobs;  // each has a name
  std::vector<PlanReservation> reservations;
  bool replace = false;
};

struct PlanOutcome {
  struct Entry {
    std::string name;
    int64_t id = 0;
    std::string result;  // "created", "existing", "replaced"
  };
  std::vector<Entry> jobs;
};

struct MoveRequest {
  enum class Where { kBefore, kAfter, kTop, kBottom, kPriority } where = Where::kTop;
  int64_t other = 0;  // for before/after
  int priority = 0;   // for kPriority
};

// Why a job the scheduler never saw is not ready: compact, rendered on demand.
struct JobWait {
  enum class Kind { kNotBefore, kRetry, kDependency, kCondition, kChecking, kHeld, kBlocked };
  JobWait() = default;
  JobWait(int64_t id, Kind k, int64_t until = 0) : job_id(id), kind(k), until_ms(until) {}
  int64_t job_id = 0;
  Kind kind = Kind::kNotBefore;
  int64_t until_ms = 0;
  int attempt = 0;
  int retries = 0;
  DependencyVerdict dependency;
  std::string text;  // conditions: what was false
  int64_t since_ms = 0;
  std::string render(int64_t now_ms) const;
};

// The outcome of the last pass, published for the API.
struct WaitList {
  sched::Snapshot snapshot;          // the machine the scheduler saw (queue emptied)
  std::vector<sched::Wait> waits;    // ready jobs that did not start
  std::vector<JobWait> not_ready;    // pending jobs that were not ready
  bool draining = false;
  std::vector<std::pair<std::string, std::vector<int64_t>>> lane_holders;  // lane → jobs
  int64_t pass_us = 0;               // how long the pass took (readiness + scheduler)
  size_t active_jobs = 0;
  // Why `job_id` waits, or "" when it is not waiting.
  std::string reason(int64_t job_id, int64_t now_ms) const;
};

class Queue {
 public:
  Queue(boost::asio::io_context& ioc, store::Store& store, gpu::Inventory inventory, Config config,
        QueueOptions options);
  ~Queue();

  // Records the resources, re-adopts or settles runs left by an earlier daemon, loads the
  // queue and schedules. Call once, on the actor thread, before serving.
  Status start();
  // Records daemon.stopping; runs keep going (they belong to their shims).
  void stop();

  Result<Submitted> submit(JobSpec spec);
  Result<PlanOutcome> submit_plan(PlanRequest plan);
  Result<Job> cancel(int64_t job_id);
  Result<Job> hold(int64_t job_id);
  Result<Job> release(int64_t job_id);
  Result<Job> retry(int64_t job_id);
  Result<Job> move(int64_t job_id, const MoveRequest& request);
  bool set_draining(bool draining);

  // The outcome of the last scheduling pass. Thread-safe.
  std::shared_ptr<const WaitList> waits() const;
  void set_event_listener(std::function<void(int64_t)> listener) { listener_ = std::move(listener); }
  const gpu::Inventory& inventory() const { return inventory_; }
  const Config& config() const { return config_; }

 private:
  struct LiveRun {
    Run run;
    std::vector<int> slots;
    std::unique_ptr<boost::asio::posix::stream_descriptor> exit_watch;
    std::unique_ptr<boost::asio::steady_timer> timeout;
    bool settling = false;  // exited; DONE_IF being verified
  };

  // Runs `fn` in a transaction, then tells the listener about new events.
  Status commit(const std::function<Status()>& fn);
  Status add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                   nlohmann::json data = nlohmann::json::object());
  Status set_state(int64_t job_id, JobState from, JobState to, const std::string& reason);
  Result<Job> load_job(int64_t id, bool with_runs);
  std::optional<JobState> state_of(int64_t job_id) const;
  void note_finished(int64_t job_id, JobState state);

  // Submission (queue_submit.cc).
  Status check_and_resolve(JobSpec& spec, const std::unordered_map<std::string, int64_t>* plan_ids);
  Result<ActiveJob> make_active(int64_t id, const Job& job);
  void track(ActiveJob job);
  void untrack(int64_t job_id);
  Status make_job_dir(const Job& job);  // the job directory and its script snapshot

  // The pass (queue_pass.cc).
  void request_pass();
  void run_pass();
  void check_conditions(ActiveJob& job, int64_t now);
  void on_conditions(const ConditionResult& result);
  void arm_wake(int64_t at_ms);
  void block(int64_t job_id, const std::string& why);
  void unblock(int64_t job_id);
  sched::Snapshot machine_snapshot(int64_t now) const;

  // Runs (queue_runs.cc).
  void start_run(int64_t job_id, const std::vector<int>& slots);
  void fail_to_start(int64_t job_id, const std::vector<int>& slots, const std::string& why);
  void watch_exit(int64_t job_id);
  void arm_timeout(int64_t job_id);
  void on_timeout(int64_t job_id);
  void on_shim_exit(int64_t job_id);
  void settle_run(LiveRun live, bool while_down);
  void finish_run(LiveRun live, const struct RunEnd& end);
  void settle_lost_run(const Job& job, const Run& run);
  Status recover();
  std::vector<int> slots_of(const Run& run) const;
  void hold_slots(int64_t job_id, const std::vector<int>& slots);
  void free_slots(int64_t job_id, const std::vector<int>& slots);
  int64_t retry_delay(const ActiveJob& job) const;

  boost::asio::io_context& ioc_;
  store::Store& store_;
  gpu::Inventory inventory_;
  Config config_;
  QueueOptions options_;
  std::function<void(int64_t)> listener_;
  ConditionChecker checker_;
  boost::asio::steady_timer wake_timer_;
  int64_t wake_at_ms_ = 0;

  std::unordered_map<int64_t, ActiveJob> active_;       // pending, held, blocked, running
  std::unordered_map<int64_t, JobState> finished_;      // every other job's final state
  std::unordered_map<int64_t, LiveRun> running_;        // by job id
  std::vector<std::vector<int64_t>> holders_;           // per GPU slot: jobs holding it
  std::vector<int> lane_used_;                          // per lane: units held
  std::vector<sched::Reservation> reservations_;
  std::unordered_map<int64_t, std::string> condition_texts_;  // why a job's conditions are false
  int64_t next_order_ = 0;
  int64_t last_seq_ = 0;
  bool events_added_ = false;
  bool pass_requested_ = false;
  bool stopping_ = false;
  bool draining_ = false;

  mutable std::mutex waits_mutex_;
  std::shared_ptr<const WaitList> waits_ = std::make_shared<WaitList>();
};

// Spacing of queue order keys, so that a job can be moved between two others.
constexpr int64_t kOrderStep = 1024;

}  // namespace gpuq::daemon
