// SPDX-License-Identifier: Apache-2.0
// The fleet agent of one node (docs/fleet.md): it publishes the node's heartbeat, polls the
// bucket's signal (a conditional GET that costs no body while nothing changed), takes jobs
// from the queues it serves when the daemon has room, holds their claims as leases, hands
// them to the local daemon through an Executor, publishes their logs, outputs and ends, and
// watches the claims of other nodes' class jobs to take over those whose lease expired. It
// also watches the other nodes' heartbeats (node.stale, node.back).
//
// It is a step function over two clocks: `step(mono, wall)` does the work due by `mono` (the
// node's monotonic clock, the only one leases are judged by: on a real node the boot clock,
// os/boot_clock.h, in which the runs' claim deadlines are written) and returns when it next has
// work. AgentThread runs it on a thread with real clocks; tests call step() with virtual ones.
//
// What it owns: its view of the jobs it holds (kept in `state_file` across daemon restarts,
// so that a restarted daemon goes on holding the claims of runs that outlived it). What it
// does not own: the stores and the executor (they outlive it).
// Thread rules: one thread calls start() and step(); AgentThread's stop() may be called from
// any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "fleet/claim_deadline_files.h"
#include "fleet/executor.h"
#include "fleet/job_data.h"
#include "fleet/layout.h"
#include "fleet/object_store.h"
#include "fleet/transfer_queue.h"

namespace gpuq::fleet {

struct AgentOptions {
  std::string node;
  std::vector<std::string> classes;   // served besides "any"
  int64_t heartbeat_ms = 30'000;
  int64_t poll_ms = 2'000;            // the signal's poll; 1.25× that while nothing changes
  int64_t lease_ms = 60'000;
  int64_t sync_every_ms = 120'000;    // logs and outputs of running jobs
  std::string workdir;                // absolute: where fleet jobs run, data paths are relative to it
  // The node takes no new job while its workdir has less free space than this (0: no floor).
  int64_t min_free_disk_bytes = 0;
  std::string data_prefix = "data/";  // key prefix of declared data in the data store
  std::string data_problem;           // why there is no data store (a job that declares data fails)
  std::string state_file;             // the held claims, across restarts ("" = not kept)
  // Where each held claim's deadline file is written for its run's shim (ClaimDeadlineFiles;
  // "" = none: runs are stopped by the agent only, never by themselves).
  std::string claim_deadline_dir;
  std::string version;
  // The node's variables a fleet job starts from (PATH, HOME, USER, LANG, ...: never the
  // store's credentials); the submitter's --env values are laid over them.
  std::map<std::string, std::string> base_env;
  int64_t node_watch_ms = 300'000;
  // The node's monotonic clock in ms, read during long steps (see Agent::use_clock); unset:
  // time stands still within a step.
  std::function<int64_t()> mono_clock;    // how often other nodes' heartbeats are listed
  size_t max_log_bytes = 16 << 20;    // the tail of a log that is published
};

class Agent {
 public:
  // `data` may be null (no data store: options.data_problem says why).
  // `transfers` runs pulls and pushes (ThreadTransferQueue on a node); null runs them inline
  // on `data` (tests on virtual clocks).
  Agent(ObjectStore& store, ObjectStore* data, Executor& executor, AgentOptions options,
        TransferQueue* transfers = nullptr);

  // Takes back the claims of the state file (runs that outlived a daemon restart) and
  // publishes the first heartbeat. An error only for a state file that cannot be read.
  Status start(int64_t mono_ms, int64_t wall_ms);
  // Does what is due at `mono_ms`; returns when it next has something to do.
  int64_t step(int64_t mono_ms, int64_t wall_ms);
  // Records fleet.stopped with `why` (the agent could not start).
  void report_stopped(const std::string& why) { executor_.event("fleet.stopped", std::nullopt, {{"why", why}}); }
  // The node's monotonic clock (ms), read between the requests of a long step (a scan of a
  // long queue, many watched claims, large inputs and outputs) to renew held claims that fall
  // due meanwhile: no amount of work may starve a lease. Without one (tests on virtual clocks),
  // time stands still within a step. AgentThread gives it the real clock.
  void use_clock(std::function<int64_t()> mono) { options_.mono_clock = std::move(mono); }
  // Something local changed (a job of ours ended): look at held jobs at the next step.
  void nudge() { nudged_ = true; }

  // For /v1/health and tests: the fleet ids held, and whether the last signal poll worked.
  std::vector<std::string> held() const;
  bool bucket_reachable() const { return reachable_; }

 private:
  // An output of a held job: its record (jobs/ID/outputs.json) and the local file's version
  // that the store has.
  struct LocalOutput {
    OutputRecord record;
    int64_t pushed_size = -1;
    int64_t pushed_mtime_ns = -1;
    int64_t next_try_mono = 0;        // a failed push waits until then
  };
  struct Held {
    FleetJob job;
    std::string entry_key;            // its queue entry, removed at its end
    Claim claim;
    std::string etag;                 // of the claim as we last wrote it
    int64_t renewed_mono = 0;         // the last successful write of the claim
    int64_t next_renew_mono = 0;
    int64_t next_sync_mono = 0;
    bool cancel_requested = false;
    // Declared data on the transfer queue: the pull before the start, the push in flight.
    std::shared_ptr<PullState> pull;
    std::shared_ptr<PushState> push;
    std::map<std::string, LocalOutput> outputs;  // by path relative to the workdir
    bool resuming = false;            // a reclaimed attempt: earlier outputs pulled first
    int end_push_rounds = 0;          // pushes since the local job ended
    bool end_renewed = false;         // the claim was renewed since its local job ended
    int64_t next_end_push_mono = 0;
    std::string end_note;             // declared outputs that matched nothing, at the end
    uint64_t log_pushed_bytes = 0;    // log_size() when last published (0: none yet)
    // At the end, the log's last part: published (or given up on, end_log_note says so), and
    // the failed pushes of it so far and when to try again.
    bool end_log_done = false;
    int end_log_failures = 0;
    int64_t next_end_log_mono = 0;
    std::string end_log_note;
    bool started = false;             // handed to the daemon (local_id set)
    int64_t next_start_mono = 0;      // not started: when to try again (inputs, the daemon)
    std::string reclaimed_from;       // the node whose expired lease it was taken from
    bool lost = false;                // the claim is no longer ours: dropped after this round
    bool done = false;                // its end is published: dropped after this round
  };
  // A claim of another node being watched for expiry: same ETag for a whole lease → expired.
  struct Watched {
    std::string etag;
    int64_t since_mono = 0;
    int64_t next_look_mono = 0;
    Claim claim;        // as last read
    QueueEntry entry;   // its queue entry
  };
  struct NodeSeen {
    std::string etag;
    int64_t since_mono = 0;
    int64_t interval_ms = 30'000;
    bool stale = false;
  };

  // agent.cc: the poll, the scan of the queues and the claims.
  void poll_signal(int64_t mono);
  void scan(int64_t mono, int64_t wall);
  std::vector<std::string> queues() const;
  // The daemon's spare GPUs less those of held jobs not handed to it yet (inputs being pulled).
  int spare_gpus(const LocalMachine& machine) const;
  bool try_job(const QueueEntry& entry, const std::string& queue, int64_t mono, int64_t wall,
               int& spare, bool& zero_gpu_waiting);
  // Whether `job`'s after-dependencies are met; sets `never` when one can never be.
  bool dependencies_met(const FleetJob& job, std::string& never);
  void end_unclaimed(const FleetJob& job, const std::string& entry_key, const std::string& state,
                     const std::string& why, int64_t wall);
  // Hands a job just claimed to the daemon (inputs first); false when it could not start (its
  // claim then says why it failed).
  bool take(FleetJob job, Claim claim, const std::string& etag, const std::string& entry_key,
            int64_t mono, int64_t wall, const std::string& reclaimed_from);
  // `claim` taken over by this node: the next attempt, a new token, this node's lease.
  Claim next_attempt(Claim claim, int64_t wall) const;
  // The lease a claim's holder keeps (written in the claim; ours for claims of old builds).
  int64_t lease_of(const Claim& claim) const;
  // Watches another node's claim for expiry from now (a new ETag restarts the count).
  void watch(const QueueEntry& entry, const Claim& claim, const std::string& etag);
  // Takes again a running claim that names this node but that it does not hold.
  void retake(const QueueEntry& entry, Claim claim, const std::string& etag, int64_t mono, int64_t wall);
  // A watched claim stayed the same for a whole lease: take the job over (or end it as
  // cancelled, when someone asked), if this node has room.
  void expire(std::string id, int64_t mono, int64_t wall);
  // jobs/ID/spec.json, read once (specs do not change; `fleet move` re-pins a waiting job only).
  Result<FleetJob> load_job(const std::string& id);
  void heartbeat(int64_t wall);
  // Judges the workdir's free space against min_free_disk: sets not_taking_ and records
  // node.low_disk / node.disk_ok when that changes (a scan follows the latter).
  void check_disk(const LocalMachine& machine);
  // Whether this node may take a job it does not hold yet: not drained, not short of disk.
  bool takes_jobs() const { return !draining_ && not_taking_.empty(); }

  // agent_held.cc: the jobs this node holds.
  void tend_held(int64_t mono, int64_t wall);
  // Pulls the inputs and submits the job to the daemon; false when it did not start (a lasting
  // reason ends the job as failed; a passing one leaves it for the next tending).
  bool start_local(Held& held, int64_t wall);
  bool renew(Held& held, int64_t mono, int64_t wall);
  // Renews every held claim that is due: called between objects of long transfers.
  void keep_leases(int64_t wall);
  // Claims of the state file that could not be checked yet (the store failed): tried again.
  void retry_adoptions(int64_t mono, int64_t wall);
  // Takes back one claim of the state file; false when the store could not say.
  bool adopt(const nlohmann::json& item, int64_t mono, int64_t wall);
  // The claim is no longer ours: stop the local run, say so (job.claim_lost), publish nothing.
  void lose(Held& held, const std::string& why);
  // Publishes the end of a held job (outputs, log, outcome in the claim, ended/, signal);
  // false when the store failed and it must be tried again.
  bool finish(Held& held, const LocalJob& local, int64_t mono, int64_t wall);
  // Writes a final claim over our own (If-Match), then ended/, the entry's removal and the
  // signal. False when the write failed; a lost claim is handled (lose()).
  bool publish_end(Held& held, int64_t wall);
  void check_cancels();
  void save_state() const;
  Status load_state(int64_t mono, int64_t wall);

  // agent_data.cc: declared data and logs, moved on the transfer queue.
  // Hands the pull of `held`'s inputs (and, for a reclaimed attempt that resumes, of the
  // outputs its earlier attempts pushed) to the transfer queue; a no-op while one is there.
  // kUnavailable when the record of earlier outputs could not be read.
  Status begin_pull(Held& held);
  Result<std::vector<OutputRecord>> read_output_record(const std::string& id);
  // After a resuming pull: the outputs pulled are the store's versions, not to be pushed back.
  void note_pulled_outputs(Held& held);
  // The files `held`'s declared outputs match now; a problem per declaration that is invalid
  // or matched nothing.
  std::vector<std::filesystem::path> declared_files(const Held& held, std::vector<std::string>& problems) const;
  // Hands the outputs that changed since they were last pushed (and, unless `at_end`, whose
  // backoff after a failure is over) to the transfer queue; returns a note naming declared
  // outputs that matched nothing ("" when every one matched). A no-op while a push is there.
  std::string begin_push(Held& held, bool at_end);
  // Takes in a push that is done: versions pushed, failures (job.output_failed, the job's
  // reason, a backoff), the record rewritten. False while none is done.
  bool take_push(Held& held);
  void write_output_record(Held& held);
  // At a job's end: its outputs pushed, failing ones retried for kEndPushRounds rounds. True
  // once the end may be published.
  bool push_at_end(Held& held);
  // Marks outputs that still fail as not pushed; a note naming them ("" when none).
  std::string outputs_not_pushed(Held& held);
  // Publishes the log's tail when the runs wrote more since the last time; false when that
  // failed (true when there was nothing new).
  bool push_log(Held& held, const LocalJob& local);
  // At a job's end: its log's last part published, a failed push tried again (paced as an
  // output's) for kEndPushRounds rounds, then given up with a note. True once the end may be
  // published.
  bool push_log_at_end(Held& held, const LocalJob& local, int64_t mono);

  // agent_nodes.cc: the other nodes' heartbeats.
  void watch_nodes(int64_t mono);

  bool lease_fresh(const Held& held, int64_t mono) const;
  // The clock's time, late in the step that began at step_mono_ (step_mono_ without a clock).
  int64_t now() const;
  void event(const std::string& kind, const Held* held, nlohmann::json data);
  void bump_signal();

  ObjectStore& store_;
  ObjectStore* data_;
  std::unique_ptr<TransferQueue> inline_transfers_;  // when no queue was given
  TransferQueue* transfers_ = nullptr;
  Executor& executor_;
  AgentOptions options_;
  ClaimDeadlineFiles deadlines_;

  std::map<std::string, Held> held_;          // by fleet id
  std::map<std::string, Watched> watched_;    // other nodes' claims, by fleet id
  std::map<std::string, NodeSeen> nodes_;     // other nodes, by name
  std::map<std::string, FleetJob> specs_;     // specs read, by fleet id
  std::vector<nlohmann::json> pending_adoptions_;  // state-file claims not yet checked
  std::string signal_etag_;
  bool signal_changed_ = true;                // scan at the first poll
  bool work_left_ = false;                    // the last scan left jobs it could not take
  int spare_at_scan_ = -1;
  bool nudged_ = false;
  bool reachable_ = true;
  bool draining_ = false;
  std::string not_taking_;                    // why it takes no new job (low disk); "" when it does
  int64_t quiet_polls_ = 0;                   // polls in a row that saw no change
  int64_t next_poll_mono_ = 0;
  int64_t next_beat_mono_ = 0;
  int64_t next_node_watch_mono_ = 0;
  int64_t next_tend_mono_ = 0;
  int64_t next_watch_mono_ = 0;
  int64_t step_mono_ = 0;                     // when the current step began
};

// Runs an Agent on its own thread with the real clocks until stop().
class AgentThread {
 public:
  explicit AgentThread(Agent& agent) : agent_(agent) {}
  ~AgentThread() { stop(); }
  // Starts the thread; it calls Agent::start (a failure is printed to stderr and recorded as
  // a fleet.stopped event) and then steps the agent until stopped.
  void start();
  void request_stop();  // from any thread; does not wait
  void stop();          // request_stop() and wait for the thread
  void nudge();         // from any thread: step now

 private:
  void loop();
  Agent& agent_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool nudged_ = false;
};

}  // namespace gpuq::fleet
