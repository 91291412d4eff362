// SPDX-License-Identifier: Apache-2.0
// The queue actor: the one owner of every state change in a daemon. It keeps the jobs that
// are not finished in memory (ActiveJob), decides each pass which pending jobs are ready
// (readiness.h), asks the pure scheduler which ready jobs start where, and hands those starts
// to its run lifecycle (run_lifecycle.h), which launches each run through its shim, stops it,
// settles how it ended (run_end.h) and cleans up after it; the queue keeps which GPU slots and
// lanes are held and acts as the lifecycle's RunHost (queue_run_host.cc). Every transition is
// written together with its event in one store transaction. It is woken by commands (posted by
// the API), shim exits, condition-check results and one timer for the earliest time-based
// wake-up — never by a polling loop.
//
// Everything it does outside its memory goes through a World (world.h): the clock and timers,
// commits, shims, signals, run files and work on other threads. With a FakeWorld, tests drive
// it step by step.
//
// Failed writes: when a commit fails (a full disk, an I/O error), memory is left as the store
// is — the change did not happen. A change a person asked for answers with the error (503); a
// change the world forces (a run ended, a cleanup finished, a cancel already signalled) is
// kept and tried again with backoff until it is recorded. While the store fails no run starts
// and no condition is checked; `store_trouble()` says so (gpuq check), and the first commit
// that works records a daemon.store_error event telling how long it lasted.
//
// Thread rules: every method except waits(), store_trouble(), gpu_readings() and metrics() runs
// on the actor's thread. waits() and store_trouble() return immutable snapshots under a mutex;
// gpu_readings() and metrics() are thread-safe; the event listener is called on the actor thread after each commit and must not
// block.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/paths.h"
#include "daemon/active_job.h"
#include "daemon/condition_checker.h"
#include "daemon/config.h"
#include "daemon/episodes.h"
#include "daemon/foreign_tracker.h"
#include "daemon/gpu_readings.h"
#include "daemon/metrics.h"
#include "daemon/readiness.h"
#include "daemon/ready_index.h"
#include "daemon/run_end.h"
#include "daemon/run_lifecycle.h"
#include "daemon/user_usage.h"
#include "daemon/world.h"
#include "gpu/discovery.h"
#include "gpu/probe.h"
#include "model/job.h"
#include "sched/scheduler.h"
#include "spec/sweep.h"
#include "store/store.h"

namespace gpuq::daemon {

struct QueueOptions {
  HomeLayout layout;
  std::string boot_id;  // this boot's id (os::boot_id()): runs of another boot cannot be alive
  mode_t job_umask = 022;  // jobs' umask: the daemon's at start, not its 077
  bool scheduled_prunes = true;  // the daemon's own prunes (a minute after start, then hourly)
};

// While commits fail: since when, how many failed, and the latest error.
struct StoreTrouble {
  int64_t since_ms = 0;
  int failures = 0;
  std::string error;
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

// What a cancel did: `recorded` is false when the store failed; the cancel then still holds
// (a running job was signalled; a waiting one never starts) and is recorded when it can be.
struct Cancelled {
  Job job;
  bool recorded = true;
};

// `gpuq cancel|hold|release|retry NAME` on a whole array (Queue::act_on_array); kRetryFailed
// is `retry --failed`.
enum class ArrayAction { kCancel, kHold, kRelease, kRetry, kRetryFailed };
// What an action on an array did: the elements it acted on (their ids, and, when asked for, the
// jobs as they are now), those it could not act on (id and why), and whether the store has
// recorded it (see Cancelled).
struct ArrayActed {
  std::vector<int64_t> ids;
  std::vector<Job> jobs;
  std::vector<std::pair<int64_t, std::string>> refused;
  bool recorded = true;
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

// A plan job that is a job array or grid (docs/sweeps.md): its elements and the sweep as the
// request gave it, as in SweepRequest; the job's spec is the elements' base.
struct PlanSweep {
  spec::Sweep sweep;
  std::string sweep_json;
};

struct PlanRequest {
  std::vector<JobSpec> jobs;  // each has a name
  // Empty, or one per job: the sweep of each job that is an array (named as the job).
  std::vector<std::optional<PlanSweep>> sweeps;
  std::vector<PlanReservation> reservations;
  bool replace = false;
};

// A job array or parameter grid to queue as one unit (docs/sweeps.md): `base` is what every
// element runs (its name is the array's; "" names it array-ID), `sweep` its elements and
// `sweep_json` the sweep as the request gave it, kept with the array and compared when the same
// array is submitted again.
struct SweepRequest {
  JobSpec base;
  spec::Sweep sweep;
  std::string sweep_json;
};

struct SweepSubmitted {
  JobArray array;
  std::vector<int64_t> element_ids;  // in the sweep's order
  std::vector<std::string> element_names;  // likewise
  bool existing = false;             // the same array was queued already: nothing was added
};

struct PlanOutcome {
  struct Entry {
    std::string name;
    int64_t id = 0;
    std::string result;  // "created", "existing", "replaced"
    // A job array: the array (`id` is its id), and its elements in the sweep's order.
    std::optional<JobArray> array;
    std::vector<int64_t> element_ids;
    std::vector<std::string> element_names;
  };
  std::vector<Entry> jobs;
};

// What a prune removed (or, dry_run, would remove): `gpuq gc` prints it; daemon.pruned says it.
struct GcReport {
  bool dry_run = false;
  int64_t keep_ms = 0;            // [retention] keep; 0: "forever" (nothing is pruned)
  int64_t cutoff_ms = 0;          // jobs that finished before this go
  int64_t jobs = 0;
  std::vector<int64_t> job_ids;   // the first 100, oldest first
  int64_t runs = 0;
  int64_t events = 0;             // of the jobs, and job-less events older than the cutoff
  int64_t run_dirs = 0;
  int64_t bytes = 0;              // in the jobs' directories
  int64_t kept_for_dependents = 0;
  bool waiting_for_hooks = false; // stopped at jobs whose events a hook has not delivered yet
};
nlohmann::json gc_report_to_json(const GcReport& report);

struct MoveRequest {
  enum class Where { kBefore, kAfter, kTop, kBottom, kPriority } where = Where::kTop;
  int64_t other = 0;  // for before/after
  int priority = 0;   // for kPriority
};

// Why a job the scheduler never saw is not ready: compact, rendered on demand.
struct JobWait {
  enum class Kind {
    kNotBefore, kRetry, kDependency, kCondition, kChecking, kHeld, kBlocked, kStartRetry, kCancelling,
    kImages  // its images are being checked or pulled (text says which)
  };
  JobWait() = default;
  JobWait(int64_t id, Kind k, int64_t until = 0) : job_id(id), kind(k), until_ms(until) {}
  int64_t job_id = 0;
  Kind kind = Kind::kNotBefore;
  int64_t until_ms = 0;
  int attempt = 0;
  int retries = 0;
  DependencyVerdict dependency;
  std::string text;  // conditions: what was false; held: why the daemon held it
  int64_t since_ms = 0;
  std::string render(int64_t now_ms) const;
};

// The not-ready jobs of a pass, in id order; shared with later passes until one changes them.
struct JobWaits {
  std::shared_ptr<const std::vector<JobWait>> items = std::make_shared<const std::vector<JobWait>>();
  std::vector<JobWait>::const_iterator begin() const { return items->begin(); }
  std::vector<JobWait>::const_iterator end() const { return items->end(); }
  size_t size() const { return items->size(); }
  bool empty() const { return items->empty(); }
};

// The outcome of the last pass, published for the API.
struct WaitList {
  sched::Snapshot snapshot;          // the machine the scheduler saw (queue emptied)
  std::vector<sched::Wait> waits;    // ready jobs that did not start
  JobWaits not_ready;                // pending jobs that were not ready
  bool draining = false;
  std::vector<std::pair<std::string, std::vector<int64_t>>> lane_holders;  // lane → jobs
  int64_t pass_us = 0;               // how long the whole pass took: readiness, the
                                     // scheduler, and starting what it decided
  int64_t starts_us = 0;             // of pass_us: starting runs and applying preemptions
                                     // (run files, spawner forks, the start commit)
  int64_t pass = 0;                  // its number since the daemon started: a pass numbered
                                     // after a change has decided on it
  size_t active_jobs = 0;
  std::vector<GpuHealth> gpus;       // per inventory slot
  // Why `job_id` waits, or "" when it is not waiting.
  std::string reason(int64_t job_id, int64_t now_ms) const;
};

class Queue {
 public:
  // `world` and `store` must outlive the Queue; the store is read directly and written only
  // through world.commit().
  Queue(World& world, store::Store& store, gpu::Inventory inventory, Config config,
        QueueOptions options);
  ~Queue();

  // Records the resources, re-adopts or settles runs left by an earlier daemon, loads the
  // queue and schedules. Call once, on the actor thread, before serving.
  Status start();
  // Records daemon.stopping; runs keep going (they belong to their shims).
  void stop();

  Result<Submitted> submit(JobSpec spec);
  Result<PlanOutcome> submit_plan(PlanRequest plan);
  Result<SweepSubmitted> submit_sweep(SweepRequest request);
  Result<Cancelled> cancel(int64_t job_id);
  Result<Job> hold(int64_t job_id);
  Result<Job> release(int64_t job_id);
  // `from_start`: a job with steps runs every step again (else its next run resumes at the
  // step that did not finish).
  Result<Job> retry(int64_t job_id, bool from_start = false);
  Result<Job> move(int64_t job_id, const MoveRequest& request);
  // Moves every waiting element of the array as one block (queue_array_move.cc): to the top or
  // bottom, before or after a waiting job that is not one of them, or to a priority. Their
  // order among themselves is kept. Answers the ids moved, in their new order.
  Result<std::vector<int64_t>> move_array(int64_t array_id, const MoveRequest& request);
  // The action on every element it applies to, in one transaction (queue_array_actions.cc):
  // a cancel stops the running elements and ends the waiting ones; hold and release take the
  // pending or held ones; retry the failed (and, but for kRetryFailed, cancelled and blocked)
  // ones. kConflict when it applies to none. `from_start` (retries): each element with steps
  // runs every step again, as Queue::retry's. Without `with_jobs` the answer has the elements'
  // ids only (a brief answer), and the jobs are not read again.
  Result<ArrayActed> act_on_array(int64_t array_id, ArrayAction action, bool from_start = false,
                                  bool with_jobs = true);
  Result<bool> set_draining(bool draining);
  // `gpuq release --attention GPU`: a person checked the GPU; it serves again. `gpu` is a
  // resource name ("gpu1") or a device index ("1").
  Result<nlohmann::json> release_attention(const std::string& gpu);

  // Prunes finished jobs older than [retention] keep (docs/jobs.md, "Retention"), in batches of
  // one transaction each, then removes their directories off the actor's thread; `done` (on
  // the actor's thread) gets what was removed. A dry run removes nothing. The daemon also
  // prunes by itself every hour. A prune asked for while one runs joins it when both are real
  // or both dry; otherwise kConflict.
  void gc(bool dry_run, std::function<void(Result<GcReport>)> done);
  // The lowest event seq every event hook has delivered (serve.cc asks the HookRunner): events
  // after it are never pruned. Unset: no hooks.
  void set_event_floor(std::function<int64_t()> floor) { event_floor_ = std::move(floor); }

  // One sample of the GPU probe (or its error), from the Prober's thread via post().
  void on_probe(Result<gpu::ProbeSample> sample);

  // For the fleet agent (docs/fleet.md), through src/app's executor; on the actor's thread.
  // A job with its runs.
  Result<Job> job(int64_t id) { return load_job(id, true); }
  // GPUs that no run holds, that are not being cleaned, in attention or foreign, less those
  // that waiting jobs (held ones aside) ask for: the room a fleet agent may fill.
  // None while the daemon is drained.
  int spare_gpus() const;
  bool draining() const { return draining_; }
  // Keeps `name` as a reservation of the GPU with device index `index` alone (a fleet job
  // pinned to one GPU); kInvalidArgument when the machine has no such GPU.
  Status reserve_gpu(const std::string& name, int index);
  // Records an event that the agent saw (job.claimed, node.stale, ...) as one commit.
  Status record_event(const std::string& kind, std::optional<int64_t> job, nlohmann::json data);

  // For tests: where the ready index and the recorded waits (what the next pass starts from)
  // differ from evaluating every job afresh, as the pass did before it was incremental; one
  // line per job, none when they agree. Jobs the next pass evaluates anyway are not compared.
  std::vector<std::string> readiness_differences() const;

  // The outcome of the last scheduling pass. Thread-safe.
  std::shared_ptr<const WaitList> waits() const;
  // Set while commits fail. Thread-safe.
  std::optional<StoreTrouble> store_trouble() const;
  void set_event_listener(std::function<void(int64_t)> listener) { listener_ = std::move(listener); }
  const gpu::Inventory& inventory() const { return inventory_; }
  // What the last probe read of each GPU slot. Thread-safe.
  const GpuReadings& gpu_readings() const { return readings_; }
  const Config& config() const { return config_; }
  const UserUsage& users() const { return users_; }
  // How long the watchers' last look took (gathering facts, deciding, committing). Thread-safe.
  int64_t last_look_us() const { return last_look_us_.load(std::memory_order_relaxed); }
  // Counters and histograms for /metrics. Thread-safe (see metrics.h).
  Metrics& metrics() { return metrics_; }
  const Metrics& metrics() const { return metrics_; }

private:
  class Host;  // the RunHost the lifecycle acts through (queue_run_host.cc)

  // --- transactions and failed writes (queue.cc) ---
  // Runs `fn` in one transaction through the world; then tells the listener about new events.
  // A failure is noted (store trouble) and the caller leaves memory as it was.
  Status commit(const std::function<Status()>& fn);
  // Keeps `writes` to ride in the next commit's transaction rather than pay a transaction and
  // an fsync of their own: only for writes without events whose loss in a crash a restart
  // repairs (e.g. a cleanup's confirmation: a restart sweeps again). If no commit comes within
  // kLaterWritesWithinMs (a steady stream of jobs always brings one: the next submit or start),
  // they are committed alone then; the daemon's stop takes them along.
  void commit_later(std::function<Status()> writes);
  void flush_later_writes();
  Status add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                   nlohmann::json data = nlohmann::json::object());
  Status set_state(int64_t job_id, JobState from, JobState to, const std::string& reason);
  void note_store_failure(const Error& error);
  void publish_trouble();
  // Keeps `attempt` (under `key`, replacing an earlier one) to be run again once the store may
  // work: the retry timer runs every kept attempt with backoff until none fails.
  void retry_later(const std::string& key, std::function<void()> attempt);
  void arm_store_retry();
  void retry_kept();
  Result<Job> load_job(int64_t id, bool with_runs);
  std::optional<JobState> state_of(int64_t job_id) const;
  void note_finished(int64_t job_id, JobState state);
  Error unavailable(const Error& error) const;  // a person's change that could not be recorded
  void record_cancel(int64_t job_id);

  // Submission (queue_submit.cc).
  Status check_and_resolve(JobSpec& spec, const std::unordered_map<std::string, int64_t>* plan_ids);
  Result<ActiveJob> make_active(int64_t id, const Job& job);
  ActiveJob active_of(int64_t id, const Job& job);  // make_active less an array's lane
  void track(ActiveJob job);
  void untrack(int64_t job_id);
  Status make_job_dir(const Job& job);  // the job directory and its script snapshot
  // Where a job just submitted (and tracked) starts at once, in its submit's own transaction
  // (queue_submit_start.cc): only when the scheduler, seeing it alone, would start it now, and
  // nothing else waits to be decided (no pass asked for, no ready job waiting for GPUs, no
  // wake time come), so the start is exactly the one the next pass would make.
  std::optional<sched::Start> start_at_submit(const ActiveJob& job);

  // The pass (queue_pass.cc).
  // What evaluating the changed jobs asks of the pass, done after the walk.
  struct PassActions {
    std::vector<std::pair<int64_t, std::string>> to_block;
    std::vector<int64_t> to_unblock;
    std::vector<int64_t> to_check;
    std::vector<int64_t> to_check_images;
  };
  void request_pass();
  void run_pass();
  // Decides one job whose inputs changed: the ready index, its wait, its wake-up time.
  void evaluate(ActiveJob& job, int64_t now, bool store_ok, PassActions& actions);
  void set_wait(JobWait wait);
  void forget_wait(int64_t job_id);
  std::vector<sched::Wait> take_spare_waits();
  void publish(std::shared_ptr<WaitList> published, sched::Snapshot snapshot,
               sched::Decision decision, std::chrono::steady_clock::time_point started);
  void check_conditions(ActiveJob& job);
  void on_conditions(const ConditionResult& result);
  // A container job's images (queue_images.cc): checked off-thread once its conditions hold;
  // one that must be pulled makes the job ready as its pull (no GPUs; the `net` lane when
  // config.toml has one), which the pass begins instead of a start; a check or pull that fails
  // fails the job with the runtime's message.
  void check_images(ActiveJob& job);
  void on_images_checked(const ImagePrepResult& result);
  ActiveJob as_pull(const ActiveJob& job) const;  // what the scheduler sees of its pull
  void begin_pull(ActiveJob& job);
  void on_pulled(const ImagePrepResult& result);
  void fail_for_images(int64_t job_id, const std::string& why);
  // Whether an image result (`seq`) is the job's latest request, found in state `expected`, and
  // the job still pending; else it is dropped (a job held or cancelled is checked again later).
  bool latest_image_request(ActiveJob& job, uint64_t seq, ImageState expected);
  // Pulls under way, by job: the lanes each holds and its images.
  struct Pull {
    uint64_t seq = 0;
    std::vector<int> lanes;
    std::vector<std::string> images;
    int64_t started_ms = 0;
  };
  std::unordered_map<int64_t, Pull> pulls_;
  std::unordered_map<int64_t, std::vector<std::string>> pulls_to_begin_;  // kToPull: its images
  // The latest image check or pull asked for each job: a result of an earlier one (the job was
  // cancelled and retried meanwhile) is not the job's now.
  std::unordered_map<int64_t, uint64_t> image_requests_;
  uint64_t image_request_seq_ = 0;
  void arm_wake(int64_t at_ms);
  bool block(int64_t job_id, const std::string& why);
  bool unblock(int64_t job_id);
  // After a retry: every blocked job whose dependencies can be met again is pending before the
  // retry answers (a cascade included), so `gpuq retry A && gpuq wait C` waits for C to run.
  void unblock_now();
  sched::Snapshot machine_snapshot(int64_t now) const;

  // Runs: their lifecycle is RunLifecycle's (run_lifecycle.h); the queue recovers its own
  // state first (queue_start.cc) and keeps the GPU slots and lanes runs hold
  // (queue_run_host.cc).
  Status recover();
  std::unique_ptr<RunLifecycle> make_lifecycle();  // with its host; in the constructor
  void hold_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes);
  void free_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes);
  std::vector<int> lanes_of(const JobSpec& spec) const;
  // Job arrays (queue_sweep.cc). An array with a cap (%MAX) holds a lane of its own, after
  // config.toml's lanes, while any of its elements is tracked: the scheduler then keeps its
  // running elements within the cap as it does any lane's units.
  struct ArrayLane {
    int64_t array_id = 0;  // 0: free
    std::string name;
    int capacity = 0;
    int tracked = 0;       // its elements in active_
  };
  // The lane of the array's cap, taken when its first element is tracked; nullopt for an
  // array without a cap. Refused when every lane the scheduler can count is in use.
  Result<std::optional<int>> array_lane(int64_t array_id);
  void untrack_array_element(int64_t array_id);
  // Inside the transaction that finished one of the array's elements: array.finished, with
  // the counts by state, when none of its elements is left unfinished.
  Status note_element_finished(int64_t array_id);
  // Whether an array already queued does the work of `base` (its elements' first: `first`).
  Result<bool> same_array_work(const JobArray& array, const std::vector<int64_t>& ids,
                               const JobSpec& base, const JobSpec& first);
  // The array queued under a name, and whether it is the same as one being submitted (its
  // sweep as given, and the same work: same_array_work): queue_plan_arrays.cc.
  struct QueuedArray {
    JobArray array;
    std::vector<int64_t> element_ids;
    bool same = false;
  };
  Result<std::optional<QueuedArray>> queued_array(const std::string& name,
                                                  const std::string& sweep_json,
                                                  const JobSpec& base, const JobSpec& first);
  // A plan's job arrays (queue_plan_arrays.cc). One array job of a plan: its elements' specs,
  // and the array once it is queued (or was queued already: `existing`).
  struct PlanArrayJob {
    JobSpec base;  // what its elements were made from
    std::vector<JobSpec> elements;
    JobArray array;
    std::vector<int64_t> element_ids;
    bool existing = false;
  };
  // Whether the store has the array already: the same (sets `existing`), none, or another
  // (a conflict, appended to `conflicts`: a plan does not replace an array).
  Status find_plan_array(const std::string& name, const PlanSweep& sweep, PlanArrayJob& job,
                         std::vector<std::string>& conflicts);
  // Inside a commit: the array's row and its elements' jobs, into `inserted` (their events
  // follow once the plan's dependencies are resolved).
  Status insert_plan_array(const std::string& name, const PlanSweep& sweep, PlanArrayJob& job,
                           std::vector<Job>& inserted);
  // Refused when `capped` more arrays with a cap could not each take a lane of their own.
  Status check_array_lanes(size_t capped) const;
  std::vector<ArrayLane> array_lanes_;
  // The last array array_lane() found without a cap (a cap never changes): its other elements
  // are answered without a read of the store (a restart tracks a million in a row).
  int64_t last_uncapped_array_ = 0;

  // GPUs in attention (queue_attention.cc).
  int slot_named(const std::string& gpu) const;

  // The GPU probe (queue_probe.cc): foreign processes, usage, peak memory, utilisation
  // samples and the GPUs seen per run.
  std::optional<std::pair<int64_t, int>> learned_gpu_mem(const std::string& name);

  // Preemption (queue_preempt.cc): which runs to preempt and which requests to withdraw; the
  // lifecycle carries them out.
  void add_preemption_facts(sched::Snapshot& snapshot) const;
  void apply_preemptions(sched::Snapshot& snapshot, const sched::Decision& decision);
  void reconcile_preemptions();

  // Retention (queue_gc.cc).
  struct GcRun;
  void gc_step(const std::shared_ptr<GcRun>& run);
  void gc_finish(const std::shared_ptr<GcRun>& run, Result<GcReport> result);
  void arm_gc(int64_t at_ms);
  void start_pruning();  // the daemon's own prunes: a minute after the start, then hourly

  // Watchers and the heartbeat (queue_watch.cc).
  Status start_watching();
  void arm_look(int64_t at_ms);
  void look();
  void gather_job_sightings(int64_t now, std::vector<Sighting>& out);
  void gather_queue_sightings(int64_t now, std::vector<Sighting>& out);
  void beat();

  World& world_;
  store::Store& store_;
  gpu::Inventory inventory_;
  Config config_;
  QueueOptions options_;
  std::function<void(int64_t)> listener_;
  std::unique_ptr<Timer> wake_timer_;
  int64_t wake_at_ms_ = 0;
  std::unique_ptr<Timer> look_timer_;          // the watchers' next look
  int64_t look_at_ms_ = 0;
  std::unique_ptr<Timer> heartbeat_timer_;
  std::unique_ptr<Timer> store_retry_timer_;   // the next try of what failed to commit
  std::unique_ptr<Timer> gc_timer_;            // the next prune by the daemon itself
  std::unique_ptr<Timer> later_timer_;         // commit_later()'s writes, committed alone
  std::shared_ptr<GcRun> gc_running_;
  std::function<int64_t()> event_floor_;

  UserUsage users_;  // fair share, per-user limits and max_queued ([users])
  std::unordered_map<int64_t, ActiveJob> active_;       // pending, held, blocked, running
  std::unordered_map<int64_t, JobState> finished_;      // every other job's final state
  std::vector<std::vector<int64_t>> holders_;           // per GPU slot: jobs holding it
  std::vector<int> lane_used_;                          // per lane: units held
  std::vector<sched::Reservation> reservations_;
  // Readiness between passes: a pass evaluates only the jobs marked here (ready_index.h).
  ReadyIndex ready_index_;
  std::map<int64_t, JobWait> waits_by_job_;             // why each not-ready pending job waits
  bool waits_by_job_changed_ = true;
  JobWaits published_not_ready_;                        // waits_by_job_ as the last pass published
  // The last published list, writable (waits_ shares it), and the one before it: the next
  // pass writes its waits into that one's vector, once no reader (an API thread answering
  // /v1/health) holds it, rather than into a fresh allocation of the queue's size (a deep
  // queue's pass would fault in every page of it again; glibc maps such sizes afresh).
  std::shared_ptr<WaitList> last_published_;
  std::shared_ptr<WaitList> recycling_;
  std::unordered_map<int64_t, std::string> image_texts_;      // what a job's images wait for
  std::unordered_map<int64_t, std::string> held_reasons_;     // why the daemon held a job itself
  std::unordered_map<int64_t, std::string> start_errors_;     // why a job's last start failed
  std::vector<GpuHealth> health_;                       // per GPU slot
  GpuReadings readings_;                                // per GPU slot, for /metrics
  ForeignTracker foreign_;
  EpisodeBook episodes_;                                // the watchers' open episodes
  std::atomic<int64_t> last_look_us_{0};
  std::unordered_map<int64_t, int64_t> gpu_busy_ms_;    // running job → last look its GPUs worked
  bool probe_failing_ = false;
  std::unordered_set<std::string> footprint_names_;  // job names with a learned footprint
  std::unordered_set<int> invisible_pids_;              // GPU pids the last probe could not see
  int64_t next_order_ = 0;
  int64_t last_seq_ = 0;
  bool events_added_ = false;
  std::vector<std::string> uncommitted_kinds_;  // events of the open transaction, counted at commit
  std::vector<std::function<Status()>> later_writes_;  // commit_later(), not on record yet
  bool later_flush_posted_ = false;
  Metrics metrics_;
  bool pass_requested_ = false;
  // Give malloc's freed memory back after the next pass (a restart, a big sweep: both leave
  // much freed, and their first pass merges every new ready job).
  bool trim_after_pass_ = false;
  int64_t passes_ = 0;
  bool stopping_ = false;
  bool draining_ = false;
  // Last: the lifecycle's callbacks reach the queue through the host while it lives.
  std::unique_ptr<RunHost> run_host_;
  std::unique_ptr<RunLifecycle> runs_;                  // live runs and cleanups

  std::optional<StoreTrouble> trouble_;                 // while commits fail
  int store_retry_round_ = 0;                           // backoff exponent of the retry timer
  std::map<std::string, std::function<void()>> kept_;   // attempts to run again (retry_later)

  mutable std::mutex waits_mutex_;
  std::shared_ptr<const WaitList> waits_ = std::make_shared<WaitList>();
  std::optional<StoreTrouble> published_trouble_;       // guarded by waits_mutex_
};

// Spacing of queue order keys, so that a job can be moved between two others.
constexpr int64_t kOrderStep = 1024;

}  // namespace gpuq::daemon
