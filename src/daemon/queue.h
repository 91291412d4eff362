// The queue actor: the one owner of every state change in a daemon. It keeps the jobs that
// are not finished in memory (ActiveJob), decides each pass which pending jobs are ready
// (dependencies, not-before and retry times, external conditions checked off-thread), asks the
// pure scheduler which ready jobs start where, launches runs through their shims, and writes
// every transition together with its event in one store transaction. It is woken by commands
// (posted by the API), shim exits (pidfds), condition-check results and one timer for the
// earliest time-based wake-up (not-before, retry delays, condition rechecks, run timeouts) —
// never by a polling loop.
//
// Thread rules: every method except waits() and metrics() runs on the actor's io_context
// thread. waits() returns an immutable snapshot under a mutex; metrics() is thread-safe; the
// event listener is called on the actor thread after each commit and must not block.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/asio.h"
#include "base/paths.h"
#include "daemon/active_job.h"
#include "daemon/condition_checker.h"
#include "daemon/config.h"
#include "daemon/episodes.h"
#include "daemon/foreign_tracker.h"
#include "daemon/metrics.h"
#include "daemon/prober.h"
#include "daemon/readiness.h"
#include "gpu/discovery.h"
#include "gpu/probe.h"
#include "model/job.h"
#include "os/process_table.h"
#include "runner/cleaner.h"
#include "runner/spawner.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace gpuq::daemon {

struct QueueOptions {
  HomeLayout layout;
  std::string shim_executable;             // the gpuq binary, run as `gpuq shim`
  runner::ShimSpawner* spawner = nullptr;  // forks shims cheaply; when null, exec the binary
  std::unique_ptr<gpu::GpuProbe> probe;    // GPU usage and processes; null: no probing
  mode_t job_umask = 022;                  // jobs' umask: the daemon's at start, not its 077
};

// What the daemon knows about each GPU beyond who holds it, published for the API.
struct GpuHealth {
  bool cleaning = false;          // a finished run's cleanup has not been confirmed yet
  nlohmann::json attention;       // null, or {"since", "job", "run", "processes", "why"}
  nlohmann::json foreign;         // null, or ForeignTracker::detail()
  int64_t memory_used_mib = -1;   // from the last probe; -1 before the first
  int utilization = -1;           // percent; -1 unknown
  int64_t other_memory_mib = 0;   // used by processes that are not a run's (for admission)
  int64_t preempting_for = 0;     // a preemption of its holder is in flight for this job
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
  std::vector<GpuHealth> gpus;       // per inventory slot
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
  // `gpuq release --attention GPU`: a person checked the GPU; it serves again. `gpu` is a
  // resource name ("gpu1") or a device index ("1").
  Result<nlohmann::json> release_attention(const std::string& gpu);

  // The outcome of the last scheduling pass. Thread-safe.
  std::shared_ptr<const WaitList> waits() const;
  void set_event_listener(std::function<void(int64_t)> listener) { listener_ = std::move(listener); }
  const gpu::Inventory& inventory() const { return inventory_; }
  const Config& config() const { return config_; }
  // How long the watchers' last look took (gathering facts, deciding, committing). Thread-safe.
  int64_t last_look_us() const { return last_look_us_.load(std::memory_order_relaxed); }
  // Counters and histograms for /metrics. Thread-safe (see metrics.h).
  Metrics& metrics() { return metrics_; }
  const Metrics& metrics() const { return metrics_; }

 private:
  struct LiveRun {
    Run run;
    std::vector<int> slots;
    std::vector<int> lanes;
    std::unique_ptr<boost::asio::posix::stream_descriptor> exit_watch;
    std::unique_ptr<boost::asio::steady_timer> timeout;
    std::unique_ptr<boost::asio::steady_timer> yield_deadline;
    bool settling = false;  // exited; DONE_IF being verified
  };
  // A finished run whose GPUs and lanes stay held until the sweep for its marker is confirmed.
  struct Cleaning {
    int64_t job_id = 0;
    int run_number = 0;
    std::string run_id;
    std::vector<int> slots;
    std::vector<int> lanes;
    int64_t preempted_by = 0;  // the job its GPUs go to, when the run was being preempted
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
  void count_start(const Job& job, const Run& run);  // for /metrics
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
  void hold_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes);
  void free_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes);
  std::vector<int> lanes_of(const JobSpec& spec) const;

  // Cleanup after every run (queue_cleanup.cc).
  void begin_cleanup(int64_t run_row, Cleaning cleaning, uint64_t started_ticks);
  void on_cleanup(const runner::CleanupOutcome& outcome);
  Status recover_cleanups();
  int slot_named(const std::string& gpu) const;

  // The GPU probe (queue_probe.cc): foreign processes, usage, peak memory per run.
  void on_probe(Result<gpu::ProbeSample> sample);
  std::optional<std::pair<int64_t, int>> learned_gpu_mem(const std::string& name);

  // Preemption (queue_preempt.cc).
  void add_preemption_facts(sched::Snapshot& snapshot) const;
  void apply_preemptions(sched::Snapshot& snapshot, const sched::Decision& decision);
  void start_preemption(int64_t victim, int64_t by, const std::vector<int>& slots);
  void arm_yield_deadline(int64_t job_id);
  void stop_for_preemption(int64_t job_id);
  void reconcile_preemptions();
  void withdraw_preemption(int64_t victim, const std::string& why);
  int64_t retry_delay(const ActiveJob& job) const;

  // Watchers and the heartbeat (queue_watch.cc).
  Status start_watching();
  void arm_look(int64_t at_ms);
  void look();
  void gather_job_sightings(int64_t now, std::vector<Sighting>& out);
  void gather_queue_sightings(int64_t now, std::vector<Sighting>& out);
  void beat();

  boost::asio::io_context& ioc_;
  store::Store& store_;
  gpu::Inventory inventory_;
  Config config_;
  QueueOptions options_;
  std::function<void(int64_t)> listener_;
  ConditionChecker checker_;
  boost::asio::steady_timer wake_timer_;
  int64_t wake_at_ms_ = 0;
  boost::asio::steady_timer look_timer_;       // the watchers' next look
  int64_t look_at_ms_ = 0;
  boost::asio::steady_timer heartbeat_timer_;

  std::unordered_map<int64_t, ActiveJob> active_;       // pending, held, blocked, running
  std::unordered_map<int64_t, JobState> finished_;      // every other job's final state
  std::unordered_map<int64_t, LiveRun> running_;        // by job id
  std::vector<std::vector<int64_t>> holders_;           // per GPU slot: jobs holding it
  std::vector<int> lane_used_;                          // per lane: units held
  std::vector<sched::Reservation> reservations_;
  std::unordered_map<int64_t, std::string> condition_texts_;  // why a job's conditions are false
  std::unordered_map<int64_t, Cleaning> cleaning_;      // by run row id
  std::vector<GpuHealth> health_;                       // per GPU slot
  ForeignTracker foreign_;
  EpisodeBook episodes_;                                // the watchers' open episodes
  std::atomic<int64_t> last_look_us_{0};
  std::unordered_map<int64_t, int64_t> gpu_busy_ms_;    // running job → last look its GPUs worked
  bool probe_failing_ = false;
  std::unordered_set<std::string> footprint_names_;  // job names with a learned footprint
  std::unordered_map<int64_t, int64_t> peaks_;          // run row id → peak GPU MiB seen
  std::unique_ptr<os::ProcessTable> processes_;         // for telling runs' GPU processes apart
  std::unordered_set<int> invisible_pids_;              // GPU pids the last probe could not see
  std::unique_ptr<runner::Cleaner> cleaner_;
  std::unique_ptr<Prober> prober_;
  int64_t next_order_ = 0;
  int64_t last_seq_ = 0;
  bool events_added_ = false;
  std::vector<std::string> uncommitted_kinds_;  // events of the open transaction, counted at commit
  Metrics metrics_;
  bool pass_requested_ = false;
  bool stopping_ = false;
  bool draining_ = false;

  mutable std::mutex waits_mutex_;
  std::shared_ptr<const WaitList> waits_ = std::make_shared<WaitList>();
};

// Spacing of queue order keys, so that a job can be moved between two others.
constexpr int64_t kOrderStep = 1024;

}  // namespace gpuq::daemon
