// SPDX-License-Identifier: Apache-2.0
// The daemon's durable state: jobs, runs, resources, the event log and a few settings, in one
// SQLite file in WAL mode. The queue actor owns the one writable Store and wraps every state
// change and its event in one transaction (see transaction()). API threads open their own
// read-only Store for queries, so reads never wait for the actor.
// A Store is used by one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "model/event.h"
#include "model/job.h"
#include "store/sqlite.h"

namespace gpuq::store {

// The fields the scheduler needs of a pending job, without its (large) spec.
struct QueuedJob {
  int64_t id = 0;
  int priority = 0;
  int64_t queue_order = 0;
  int gpus = 0;
};

// Where a finished run's cleanup stands (runs.cleanup): `pending` from its start until the
// sweep for its marker is confirmed (`done`); `attention` when it could not be confirmed and
// its GPUs wait for a person; `released` after `gpuq release --attention`.
enum class CleanupState { kPending, kDone, kAttention, kReleased };
std::string_view to_string(CleanupState state);

class Store {
 public:
  // Opens the store at `path`; a writable open creates and migrates it.
  static Result<std::unique_ptr<Store>> open(const std::string& path, bool read_only);

  // Runs `fn` in one transaction: all its writes land together or not at all.
  Status transaction(const std::function<Status()>& fn);
  // Runs `fn`'s reads in one read transaction: they all see the store as it was at its first
  // read (one snapshot of the WAL), and the connection takes its read lock once, not per query.
  Status read_snapshot(const std::function<Status()>& fn);

  // --- writes (inside transaction()) ---
  Result<int64_t> insert_job(const Job& job);  // returns the new id
  Status set_job_state(int64_t job_id, JobState state, const std::string& reason,
                       std::optional<int64_t> finished_at_ms);
  Status set_lost_count(int64_t job_id, int lost_count);
  Status set_retry_at(int64_t job_id, int64_t retry_at_ms);
  Status set_retry_base(int64_t job_id, int retry_base);
  // Since when the job's conditions have been false (0: not false), kept across restarts.
  Status set_conditions_false_since(int64_t job_id, int64_t since_ms);
  Status set_spec(int64_t job_id, const JobSpec& spec);
  Status set_queue_position(int64_t job_id, int priority, int64_t queue_order);
  // Frees a job's name for a replacement; the old job keeps its history under its id.
  Status clear_name(int64_t job_id);
  Status set_run_verified(int64_t run_id, bool verified);
  Status upsert_reservation(const std::string& name, const std::vector<int>& gpus);
  // Returns the run's row id; `job_name` is kept with the run for learned footprints.
  Result<int64_t> insert_run(const Run& run, const std::string& job_name = "");
  // A preemption of the run: requested by job `by` (0: none or withdrawn), with the yield
  // deadline (0: none was asked).
  Status set_preemption(int64_t run_id, int64_t by, int64_t deadline_ms);
  Status set_peak_gpu_mem(int64_t run_id, int64_t mib);
  // The GPUs the probe has seen the run's processes on (names, and the device indices of
  // those that have one).
  Status set_seen_gpus(int64_t run_id, const std::vector<std::string>& names,
                       const std::vector<int>& indices);
  // One utilisation sample of a running run (store_usage.cc); a second at the same time
  // replaces the first.
  Status add_run_sample(int64_t run_id, const RunSample& sample);
  Status set_cleanup(int64_t run_id, CleanupState state);
  // What the run's cgroup accounted for (runner/cgroup.h); nullopt leaves the column NULL.
  Status set_run_usage(int64_t run_id, std::optional<int64_t> cpu_usec,
                       std::optional<int64_t> peak_memory_bytes);
  Status finish_run(int64_t run_id, int64_t ended_at_ms, std::optional<int> exit_code,
                    std::optional<int> signal, RunOutcome outcome);
  // Why the run's output.log may lack output ("" when it is whole).
  Status set_log_note(int64_t run_id, const std::string& note);
  // What each step of a run did so far (Run::steps), replacing what was recorded.
  Status set_run_steps(int64_t run_id, const std::vector<StepRun>& steps);
  // `gpuq retry --from-start`: the job's next run begins at step 0 (cleared by that start).
  Status set_steps_from_start(int64_t job_id, bool from_start);
  // Records why the daemon stopped a run, so a restart still knows.
  Status set_stop_reason(int64_t run_id, StopReason reason);
  Result<int64_t> append_event(Event event);  // returns the seq
  Status replace_resources(const std::vector<Resource>& resources);
  Status set_meta(const std::string& key, const std::string& value);

  // --- reads ---
  Result<std::optional<Job>> find_job(int64_t id, bool with_runs = true);
  Result<std::optional<Job>> find_job_by_name(const std::string& name, bool with_runs = true);
  // Every job, oldest first; `active_only` keeps pending, held, running and blocked jobs.
  Result<std::vector<Job>> list_jobs(bool active_only, bool with_runs);
  // Every unfinished job (pending, held, running, blocked) with its runs, by state (as text),
  // then id, the order of the jobs_active index, so that nothing is sorted; handed to `visit`
  // one at a time and dropped after it, and without its environment (spec.env empty, an array's
  // shared one not joined): what the daemon's recovery needs of a million queued jobs without
  // holding them all, or their environments, at once. Stops at the first error `visit` returns.
  // The read walks the index while `visit` runs: `visit` must not write to this store.
  Status each_active_job(const std::function<Status(const Job&)>& visit);
  Result<std::vector<QueuedJob>> queued_jobs();  // state = pending
  Result<std::vector<Run>> running_runs();
  // Finished runs whose cleanup is in `state` (pending or attention), oldest first.
  Result<std::vector<Run>> runs_in_cleanup(CleanupState state);
  // The footprint learned for a job name: the largest peak GPU memory of the last (up to 3)
  // succeeded runs under that name; nullopt when none recorded a peak.
  struct Footprint {
    int64_t peak_mib = 0;
    int runs = 0;
  };
  Result<std::optional<Footprint>> learned_footprint(const std::string& job_name);
  // The job names that have a learned footprint (few: only succeeded runs with a peak).
  Result<std::vector<std::string>> footprint_names();
  Result<std::vector<Run>> runs_of(int64_t job_id);
  Result<int> last_run_number(int64_t job_id);
  // The newest run that began: a not-started run never ran the job, so the next run follows
  // the one before it (a yield's resume). nullopt when none did.
  Result<std::optional<Run>> last_begun_run(int64_t job_id);
  Result<std::vector<Resource>> resources();
  Result<std::vector<Event>> events_after(int64_t seq, int limit);
  Result<int64_t> last_seq();
  Result<int64_t> max_queue_order();
  Result<std::optional<std::string>> meta(const std::string& key);
  // Every job's id and state (for dependencies on finished jobs).
  Result<std::vector<std::pair<int64_t, JobState>>> job_states();
  struct ReservationRow {
    std::string name;
    std::vector<int> gpus;
  };
  Result<std::vector<ReservationRow>> reservations();

  // --- retention (store_prune.cc): finished jobs older than `[retention] keep` go, with
  // their runs and events, in batches the queue actor commits one transaction at a time ---
  struct PruneSelection {
    std::vector<int64_t> job_ids;  // oldest finish first
    int64_t runs = 0;              // runs of those jobs
    int64_t events = 0;            // events of those jobs
    int64_t kept_for_dependents = 0;  // finished before the cutoff, but in `keep`
  };
  // Finished jobs (succeeded, failed, cancelled, skipped) that finished before `cutoff_ms`,
  // oldest first, at most `limit`, leaving out `keep` (the jobs unfinished jobs depend on).
  // Reads through the jobs_finished index: the cost follows `limit` and `keep`, not history.
  Result<PruneSelection> select_prunable(int64_t cutoff_ms, const std::unordered_set<int64_t>& keep,
                                         size_t limit);
  // Deletes these jobs and every row that refers to them: runs (and their samples), events,
  // the watchers' open episodes; and the arrays left without an element. Run directories are
  // the caller's. Inside the caller's transaction().
  Status prune_jobs(const std::vector<int64_t>& ids);
  // The newest event of these jobs (0 when they have none): pruning them must wait while a hook
  // has not delivered it.
  Result<int64_t> last_event_seq_of(const std::vector<int64_t>& job_ids);
  // Deletes job-less events (daemon.*, queue.*, resource.*) older than `cutoff_ms` with
  // seq <= `max_seq` (the lowest hook cursor, so no hook loses an event it has not
  // delivered); returns how many. Inside the caller's transaction().
  Result<int64_t> prune_events(int64_t cutoff_ms, int64_t max_seq);

  // --- status (store_status.cc) ---
  struct StatusJobs {
    std::vector<Job> active;    // pending, held, running, blocked: every one, by id
    std::vector<Job> finished;  // the latest to finish (finished_at, then id), by id
    int64_t finished_total = 0;  // finished jobs in the store
  };
  // What GET /v1/status shows, with runs and without the specs' environments (no status shows
  // one, and they are most of a spec's text and of its decoding): every unfinished job and the
  // latest `finished_limit` finished ones (nullopt: all). Indexed: its cost does not grow with the
  // number of finished jobs beyond those returned.
  // With `left_out_arrays` (ids), the elements of those arrays are left out, finished or not;
  // with `user`, the jobs of others are (read through an index: their rows are not), and
  // finished_total still counts everyone's.
  Result<StatusJobs> status_jobs(std::optional<size_t> finished_limit,
                                 const std::vector<int64_t>* left_out_arrays = nullptr,
                                 const std::string* user = nullptr);
  // The serving positions of the pending jobs `pending` (1-based among every pending job, in
  // queue_page's order): id -> position, for those that are pending. Reads the pending ids in
  // that order (an index, for the priority order) up to the last of them.
  Result<std::unordered_map<int64_t, int64_t>> serving_positions(
      const std::unordered_set<int64_t>& pending, bool fifo);

  // A page of the queue: every running job, the held and the blocked ones (each the oldest
  // `waiting_limit` by id, nullopt: every one), the pending ones in serving order (`fifo`:
  // queue_order alone, else priority then queue_order; then id), `offset` of them skipped and
  // at most `limit` listed, and the latest `finished_limit` finished jobs, all with runs and,
  // as status_jobs', without environments. Read
  // through jobs_pending_order (schema 9) and jobs_waiting_single (schema 19): the cost
  // follows the page, not the queue (FIFO order sorts the pending jobs).
  struct QueuePage {
    std::vector<Job> others;    // held, running, blocked: by id
    std::vector<Job> pending;   // the page, in serving order
    std::vector<Job> finished;  // by id
    int64_t pending_total = 0;
    int64_t finished_total = 0;
    int64_t held_total = 0;     // the held jobs, listed or not
    int64_t blocked_total = 0;  // the blocked jobs, listed or not
  };
  // How many jobs are unfinished (pending, held, running, blocked): an index count.
  Result<int64_t> active_count();
  // Every unfinished job with only what an ETA reads (api/eta.h): its id, name, state,
  // priority, queue order, GPUs, retry time, array, and of its spec the estimate, timeout,
  // not-before, dependencies, lanes, GPU memory and share, read from the spec's text by SQLite
  // without decoding the rest (its environment, command, script); a running job's one running
  // run. What `gpuq status` loads after each change to a deep queue.
  Result<std::vector<Job>> eta_jobs();
  // A pending or running job with neither an estimate nor a timeout (no ETA can be given while
  // one is queued), read from the specs without decoding them; nullopt when there is none.
  Result<std::optional<int64_t>> unbounded_job();
  // With `left_out_arrays` (?arrays=collapse), the elements of those arrays (a JSON-listable
  // set of array ids, every unfinished array) are left out of all three lists and the counts:
  // the page and pending_total are then read through jobs_pending_single (schema 17).
  // With `user`, the page of that user's jobs alone: every list and every total is theirs, the
  // unfinished ones read through jobs_eta (one pass counts them; a page of theirs is sorted from
  // another), their finished ones counted row by row.
  Result<QueuePage> queue_page(size_t offset, size_t limit, bool fifo, size_t finished_limit = 0,
                               const std::vector<int64_t>* left_out_arrays = nullptr,
                               std::optional<size_t> waiting_limit = std::nullopt,
                               const std::string* user = nullptr);

  // --- usage (store_usage.cc): what the timeline and the report read, by time window ---
  // A run with what the report groups it by.
  struct UsageRun {
    int64_t run_id = 0;     // the row id (samples are keyed by it)
    int64_t job_id = 0;
    int number = 0;
    std::string name;       // the name it ran under ("" when none)
    std::string user;       // the job's submitter ("" for jobs of older daemons)
    int gpus_requested = 0;
    int64_t submitted_at_ms = 0;  // the job's
    std::vector<std::string> gpus;
    int64_t started_at_ms = 0;
    int64_t ended_at_ms = 0;      // 0 while running
    RunOutcome outcome = RunOutcome::kRunning;
  };
  // Runs that overlap [from_ms, to_ms): started before `to_ms` and running or ended after
  // `from_ms`; by start time. Reads runs_by_end (schema 9) and runs_running, so the cost
  // follows the runs that ended since `from_ms`, not the history.
  Result<std::vector<UsageRun>> usage_runs(int64_t from_ms, int64_t to_ms);
  // The samples of these runs (row ids) with from_ms <= time < to_ms, by run then time.
  using SamplesByRun = std::unordered_map<int64_t, std::vector<RunSample>>;
  Result<SamplesByRun> run_samples(const std::vector<int64_t>& run_ids, int64_t from_ms,
                                   int64_t to_ms);
  // Job-less events of `kind` with from_ms <= time < to_ms, and the latest one in the
  // `lookback_ms` before `from_ms` (what was going on when the window opened), oldest first.
  // Through events_jobless.
  Result<std::vector<Event>> jobless_events(const std::string& kind, int64_t from_ms,
                                            int64_t to_ms, int64_t lookback_ms);

  // Virtual-machine steps of this store's queries so far (Database::vm_steps), for tests
  // that check a read's cost does not grow with history.
  int64_t vm_steps() const { return db_->vm_steps(); }
  // Sorts this store's queries have made so far (Database::sorts), for tests of a big read.
  int64_t sorts() const { return db_->sorts(); }

  // --- job arrays (store_arrays.cc) ---
  // Records an array (its id is ignored) and returns its new id; a name another array has is
  // refused (UNIQUE). Inside transaction(), before its elements' insert_job().
  Result<int64_t> insert_array(const JobArray& array);
  Result<std::optional<JobArray>> find_array(int64_t id);
  Result<std::optional<JobArray>> find_array_by_name(const std::string& name);
  // The ids of the array's elements (jobs whose array_id is `array_id`), by id.
  Result<std::vector<int64_t>> array_elements(int64_t array_id);
  // The array's elements in one of `states` (every element when it is empty), by id, in one
  // query (with their runs in a second).
  // Without `with_env`, their specs have no environment (their own, or the array's): what an
  // action on a million elements reads, as it answers no environment.
  Result<std::vector<Job>> array_jobs(int64_t array_id, const std::vector<JobState>& states,
                                      bool with_runs, bool with_env = true);
  // The same elements' ids and states only, by id: what a cancel, hold or release of a whole
  // array needs to know of them (no spec, no runs).
  Result<std::vector<std::pair<int64_t, JobState>>> array_job_states(int64_t array_id,
                                                                     const std::vector<JobState>& states);
  // Arrays with an element pending, held, running or blocked, by id (read at daemon start).
  Result<std::vector<JobArray>> active_arrays();
  // The id the next insert_array gives (ids are never reused); for the one writer only.
  Result<int64_t> next_array_id();
  // The jobs whose names start with `prefix` (ids and names), in one range of the names'
  // index: the names an array's elements would take ("NAME[").
  Result<std::vector<std::pair<int64_t, std::string>>> jobs_named_with_prefix(const std::string& prefix);
  // How many of the array's elements are in each state, by state name (one range of
  // jobs_by_array, which covers the state).
  using StateCounts = std::vector<std::pair<JobState, int64_t>>;
  Result<StateCounts> array_counts(int64_t array_id);
  // Whether an element of the array is pending, held, running or blocked.
  Result<bool> array_unfinished(int64_t array_id);
  // Each element in one query, by id: what `gpuq show NAME` lists of it.
  struct ArrayElement {
    int64_t id = 0;
    std::string name;
    JobState state = JobState::kPending;
    int runs = 0;                    // runs so far
    std::optional<int> exit_code;    // of its latest run that ended with one
    std::optional<int> signal;       // of its latest run, when a signal ended it
  };
  Result<std::vector<ArrayElement>> array_element_rows(int64_t array_id);
  // The runs of the array's elements: the first start and last end (0: none), how many run
  // now, and GPU-time (each run's length times its GPUs; a running one counts up to `now_ms`).
  struct ArrayUsage {
    int64_t first_start_ms = 0;
    int64_t last_end_ms = 0;
    int64_t running = 0;
    int64_t gpu_ms = 0;
  };
  Result<ArrayUsage> array_usage(int64_t array_id, int64_t now_ms);
  // The arrays with an unfinished element, by id, with their counts and the range of their
  // elements' ids: one line each in `gpuq status`.
  struct ArraySummary {
    JobArray array;
    StateCounts counts;
    int64_t first_job = 0;
    int64_t last_job = 0;
  };
  Result<std::vector<ArraySummary>> active_array_summaries();

  // --- watchers (store_watch.cc): open episodes survive a restart ---
  struct Episode {
    std::string key;   // the watcher's key, e.g. "job.quiet:12"
    std::string kind;  // the event kind, e.g. "job.quiet"
    int64_t since_ms = 0;
    int64_t reported_ms = 0;
    std::string data;  // JSON: what the watcher needs to end or repeat it
  };
  Status put_episode(const Episode& episode);
  Status delete_episode(const std::string& key);
  Result<std::vector<Episode>> episodes();

  // --- hooks (store_hooks.cc): each hook's place in the event log, kept across restarts ---
  struct HookCursor {
    std::string name;
    int64_t seq = 0;        // the last event handled: delivered, or passed over (no match)
    int64_t delivered = 0;  // events delivered so far
    std::string last_error;  // the latest failure, kept after later successes ("" when none)
    int64_t last_error_at_ms = 0;
    int64_t updated_at_ms = 0;
  };
  Result<std::vector<HookCursor>> hook_cursors();  // by name
  // Moves the hook's cursor to `seq` (never back) and records its delivered count; creates
  // the row of a new hook.
  Status commit_hook_cursor(const std::string& name, int64_t seq, int64_t delivered,
                            int64_t now_ms);
  Status record_hook_error(const std::string& name, const std::string& error, int64_t at_ms);

  // --- metrics (store_metrics.cc): all-time counts for /metrics ---
  using Counts = std::vector<std::pair<std::string, int64_t>>;
  Result<Counts> event_counts();  // events by kind, those pruned included
  Result<Counts> job_counts();    // jobs by state (only states that have jobs)
  Result<Counts> run_counts();    // runs by outcome, "running" included, those pruned included
  // When the job last re-entered the queue after a run or a finish: the time of its latest
  // job.retried, job.retrying, job.preempted or job.requeued event; 0 when it has none.
  Result<int64_t> requeued_at(int64_t job_id);

 private:
  explicit Store(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  // Jobs matching `where` by id; without `with_env`, their specs' environments are left out
  // (removed by SQLite, an array's not joined).
  Result<std::vector<Job>> query_jobs(const std::string& where, const std::function<void(Statement&)>& bind,
                                      bool with_runs, bool with_env = true);
  std::unique_ptr<Database> db_;
};

}  // namespace gpuq::store
