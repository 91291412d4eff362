// SPDX-License-Identifier: Apache-2.0
// A run's lifecycle, from its start to its confirmed cleanup: the queue actor decides *which*
// job runs on which GPUs; RunLifecycle decides *how* each run goes. It prepares a start (the run
// directory, the shim launched but held), records it inside the pass's one commit and only then
// lets the shim go; watches the shim's exit, the run's timeout and a preemption's yield deadline;
// stops a run (cancel, timeout, preemption) through the shim's pidfd, the stop first and its
// record after; settles an ended run from its exit record (run_end.h; DONE_IF verified
// off-thread), the ends of one turn in one commit; settles a run whose shim vanished (lost, or
// never released); recovers the runs an earlier daemon left; and keeps a finished run's GPUs and
// lanes held until its cleanup is confirmed (or puts them in attention).
//
// It owns the live runs (LiveRun: the run, its shim, its timers, its end waiting to be recorded),
// the runs being cleaned up (Cleaning), and the exits seen in a turn. It acts on the world through
// a World (world.h) and on the queue only through a RunHost (run_host.h): transactions and
// events, jobs' states and records, the GPU slots and lanes held. The store is read directly and
// written only inside the host's commits. What fails to commit is kept in memory as it is and
// tried again through the host's retry_later, so the store and memory never disagree.
//
// Thread rules: actor thread only. `world`, `store`, `inventory`, `config` and `host` must
// outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/paths.h"
#include "base/status.h"
#include "daemon/config.h"
#include "daemon/run_end.h"
#include "daemon/run_host.h"
#include "daemon/world.h"
#include "gpu/discovery.h"
#include "model/job.h"
#include "runner/cleanup.h"
#include "runner/run_env.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace gpuq::daemon {

// Where runs go and what they inherit from the daemon.
struct RunPlaces {
  HomeLayout layout;
  std::string boot_id;     // this boot's: runs of another boot cannot be alive
  mode_t job_umask = 022;  // jobs' umask: the daemon's at start, not its 077
};

// A run whose shim the daemon watches, from its start until its end is on record.
struct LiveRun {
  Run run;
  std::vector<int> slots;  // GPU slots held; handed to its Cleaning when it exits
  std::vector<int> lanes;
  std::unique_ptr<ShimProcess> shim;
  std::unique_ptr<Timer> timeout;
  std::unique_ptr<Timer> yield_deadline;
  bool settling = false;        // exited; DONE_IF being verified
  bool cleanup_begun = false;   // exited; the sweep for its marker has its GPUs and lanes
  bool stop_recorded = true;    // run.stop_reason is in the store
  std::optional<RunEnd> ended;  // exited; the end waits to be recorded (the store failed)
  int64_t sampled_ms = 0;       // its latest utilisation sample (queue_probe.cc); 0: none yet
  std::optional<int64_t> peak_mib;  // the most GPU memory the probe saw it use
  // A job with steps: each step's name (empty for a job without steps), and the watch on the
  // run's steps.json that records each step's start and end as they happen (run_steps.cc).
  std::vector<std::string> step_names;
  std::unique_ptr<FileWatch> steps_watch;
  // A container job's run (docs/containers.md): a stop goes through this runtime too, once.
  std::optional<runner::ContainerRuntime> containers;
  bool containers_stopping = false;
};

// Each step's name, by index; empty for a job without steps.
std::vector<std::string> step_names_of(const JobSpec& spec);

// The step a job's next run begins at (run_steps.cc): where the newest run that began left off
// (model/step.h's resume_step), so that a run preempted, lost, failed or stopped does not run
// again the steps it finished; step 0 when it finished them all, when it has none, or after
// `gpuq retry --from-start`.
int first_step_of(const Job& job, const std::optional<Run>& last_begun);

// A finished run whose GPUs and lanes stay held until the cleanup after it is confirmed.
struct Cleaning {
  int64_t job_id = 0;
  int run_number = 0;
  std::string run_id;
  std::vector<int> slots;
  std::vector<int> lanes;
  int64_t preempted_by = 0;  // the job its GPUs go to, when the run was being preempted
  std::optional<runner::CleanupOutcome> outcome;  // done; waits to be recorded
  bool containers = false;  // a container job's run: its containers are removed by label too
  std::string cgroup_user;  // the login it ran as on a shared box (its cgroup's parent); "": the daemon
};

// The inventory slots of the GPUs a run names.
std::vector<int> slots_of(const gpu::Inventory& inventory, const Run& run);

class RunLifecycle {
 public:
  RunLifecycle(World& world, store::Store& store, const gpu::Inventory& inventory,
               const Config& config, RunPlaces places, RunHost& host);
  ~RunLifecycle();
  RunLifecycle(const RunLifecycle&) = delete;
  RunLifecycle& operator=(const RunLifecycle&) = delete;

  // Starts a pass's starts (run_start.cc): each prepared (its GPUs held at once), all on record
  // in one commit, then each shim released. A start the machine refuses frees its GPUs and
  // leaves the job pending, tried again with backoff (job.start_failed); one the store refuses
  // is dropped unreleased.
  void start(const std::vector<sched::Start>& starts);

  // A start up to its commit: the GPUs held, the run directory made and the shim launched,
  // unreleased.
  struct PreparedStart {
    int64_t job_id = 0;
    std::vector<int> slots;
    std::vector<int> lanes;
    Job job;
    std::optional<Run> last;  // the newest run that began (Store::last_begun_run)
    bool resume = false;
    std::vector<std::string> step_names;
    std::optional<runner::ContainerRuntime> containers;
    Run run;
    std::unique_ptr<ShimProcess> shim;
  };
  // A start inside a transaction its caller commits (queue_submit.cc: a submit that finds an
  // idle GPU starts its job in its own transaction, so the job and its start cost one fsync).
  // prepare_in_commit() holds the GPUs, makes the run directory and launches the shim,
  // unreleased, and writes nothing; on an error the GPUs stay held until start_refused()
  // (after the commit: the job is tried again with backoff, as a pass's refused start) or the
  // caller frees them (the commit failed). record_in_commit() writes the start. After the
  // caller's commit, begin_committed() releases the shim; when it failed, drop_uncommitted()
  // lets the shim go unreleased and frees the GPUs.
  Result<PreparedStart> prepare_in_commit(int64_t job_id, const std::vector<int>& slots) {
    return prepare(job_id, slots);
  }
  Status record_in_commit(PreparedStart& start) { return record_start(start); }
  void begin_committed(PreparedStart start) { begin_run(std::move(start)); }
  void drop_uncommitted(PreparedStart start);
  void start_refused(int64_t job_id, const std::vector<int>& slots, const std::string& why) {
    start_failed(job_id, slots, why);
  }

  // A cancel of a running job (run_stop.cc): the shim is asked to stop it at once, and the
  // cancel wins over a timeout or a preemption under way. Whether the cancel is on record yet
  // (it is retried until it is).
  bool cancel(int64_t job_id, nlohmann::json event_data);
  // Preemption of one run (run_preempt.cc): the request recorded, then the yield file written
  // and its deadline armed (yield), or the run stopped (restart). Withdrawing removes the file.
  void request_preemption(int64_t victim, int64_t by, const std::vector<int>& slots);
  void withdraw_preemption(int64_t victim, const std::string& why);

  // After a restart (run_recovery.cc): every run on record as running is settled from its exit
  // record, re-adopted when its shim still runs, or settled as lost; cleanups under way begin
  // again, and runs in attention keep their GPUs out.
  Status recover();

  // The daemon stops: the shims are let go (they run on), timers dropped, nothing more acted on.
  void stop();

  // What the queue reads to schedule, publish, watch and probe.
  const std::unordered_map<int64_t, LiveRun>& live() const { return running_; }
  const LiveRun* find(int64_t job_id) const;
  const std::unordered_map<int64_t, Cleaning>& cleanings() const { return cleaning_; }
  // What the probe learned of a live run (queue_probe.cc): a peak is kept when higher (true).
  bool raise_peak(int64_t job_id, int64_t mib);
  void note_sampled(int64_t job_id, int64_t at_ms);
  void note_seen_gpus(int64_t job_id, std::vector<std::string> names, std::vector<int> indices);

 private:
  // A run's end as it is recorded: computed, written inside a commit, then applied.
  struct Finish {
    int64_t job_id = 0;
    RunEnd end;
    AfterRun after;
    bool tracked = false;
    int64_t now_ms = 0;
    std::optional<int64_t> peak;
  };

  // Starting (run_start.cc).
  std::optional<PreparedStart> prepare_start(int64_t job_id, const std::vector<int>& slots);
  // The start's preparation; on an error the GPUs stay held (start_failed frees them).
  Result<PreparedStart> prepare(int64_t job_id, const std::vector<int>& slots);
  Status record_start(PreparedStart& start);  // the start's writes, inside a commit
  void begin_run(PreparedStart start);        // once on record: releases the shim
  void count_start(const Job& job, const Run& run);  // for /metrics
  void start_failed(int64_t job_id, const std::vector<int>& slots, const std::string& why);

  // Watching and stopping (run_stop.cc).
  // Asks the run's shim to stop (SIGTERM; the shim escalates) for `reason`; the reason is kept
  // in memory at once and recorded with `event` (none when empty), retried until it is.
  void stop_run(int64_t job_id, StopReason reason, const std::string& event,
                nlohmann::json event_data);
  void watch_exit(int64_t job_id);
  void arm_timeout(int64_t job_id);
  void on_timeout(int64_t job_id);
  void record_stop(int64_t job_id, const std::string& event, nlohmann::json event_data);
  // SIGTERM to the run's shim and, for a container job, a stop through the runtime.
  void signal_stop(LiveRun& live);
  void arm_yield_deadline(int64_t job_id);     // run_preempt.cc
  void stop_for_preemption(int64_t job_id);

  // Settling (run_settle.cc) and recording ends (run_finish.cc).
  void on_shim_exit(int64_t job_id);
  void settle_exited();  // the exits seen in one turn, their ends in one commit
  void settle_run(int64_t job_id, bool while_down);
  // A run with no end to judge: its shim vanished without an exit record (lost: requeued
  // once), or, `released` false, it said the daemon never let it go (not started).
  void settle_lost_run(int64_t job_id, bool released = true);
  void finish_ended_runs(const std::vector<int64_t>& job_ids);
  void finish_run(int64_t job_id);
  Finish prepare_finish(int64_t job_id);
  Status write_finish(Finish& finish);
  void after_finish(const Finish& finish);

  // Steps (run_steps.cc): each step's start and end recorded, with its event, as the shim
  // rewrites steps.json, and at the run's end whatever was not recorded yet.
  void watch_steps(int64_t job_id);
  void on_steps_changed(int64_t job_id);
  // The writes (inside a commit) that bring the run's stored steps to `seen`, with an event
  // for each step that began (job.step_started) or ended (job.step_finished) since.
  Status write_steps(const LiveRun& live, const std::vector<StepRun>& seen);

  // A container job's run directory (run_containers.cc): World::create_run_dir with a copy of
  // `spec` made to run its container steps, then, when the containers' user is not the
  // daemon's, the run directory given to it and the job directory opened for it to read. The runtime used; kConflict as
  // create_run_dir.
  Result<runner::ContainerRuntime> create_container_run_dir(const Job& job,
                                                            const runner::RunContext& context,
                                                            const runner::RunSpec& spec);

  // Recovery (run_recovery.cc).
  Status recover_run(const Run& run);
  Status recover_cleanups();

  // Cleanup after every run (run_cleanup.cc).
  void begin_cleanup(int64_t run_row, Cleaning cleaning, uint64_t started_ticks);
  // The login whose cgroup parent a job's runs live under: its submitter's when it runs as them
  // (a root daemon, docs/lab.md), else "".
  std::string cgroup_user_of(const std::string& login);
  void on_cleanup(const runner::CleanupOutcome& outcome);
  void record_cleanup(int64_t run_row);

  World& world_;
  store::Store& store_;
  const gpu::Inventory& inventory_;
  const Config& config_;
  RunPlaces places_;
  RunHost& host_;
  bool stopping_ = false;

  std::unordered_map<int64_t, LiveRun> running_;  // by job id
  std::vector<int64_t> exited_;                   // shims whose exit was seen, not settled yet
  std::vector<int64_t>* ended_batch_ = nullptr;   // set while settle_exited() collects ends
  std::unordered_map<int64_t, Cleaning> cleaning_;  // by run row id
};

}  // namespace gpuq::daemon
