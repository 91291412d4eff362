// SPDX-License-Identifier: Apache-2.0
// The fleet operations that need no daemon (`gpuq fleet submit|show|logs|cancel|drain|undrain|
// move|status`), over any ObjectStore, following docs/fleet.md's protocol: which objects are
// written, in which order and under which condition. The CLI formats what these return; the
// agent (a node's daemon) does the claiming, renewing and ending.
//
// Ages of heartbeats and claims are measured with the store's clock on both sides (an object's
// modified time against the store's "now" of the same answer), never with the local clock, so
// a submitter with a wrong clock judges nodes as correctly as anyone. Functions that write a
// time for people (an `ended/` key, a cancelled claim) take the caller's `now_ms`.
//
// Owns nothing: every function works through the store it is given. Thread rules are those of
// the store (one thread at a time per ObjectStore).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/job_data.h"
#include "fleet/layout.h"
#include "fleet/object_store.h"

namespace gpuq::fleet {

// A node is stale when its heartbeat is older than this many of its own intervals.
inline constexpr int64_t kStaleIntervals = 3;
// `fleet status` lists this many of the latest ends (`ended/`).
inline constexpr size_t kRecentEnds = 20;
// `fleet status` reads and shows this many waiting queue entries by default (the best across
// every queue), besides those the heartbeats say are running; the rest are counted.
inline constexpr size_t kQueuedRows = 20;

// ---- Reading jobs

// The job's spec.json; kNotFound names the id.
Result<FleetJob> read_job(ObjectStore& store, std::string_view id);

struct ClaimRead {
  Claim claim;
  std::string etag;
  int64_t age_ms = -1;  // since it was last written, by the store's clock; -1 when unknown
};
// The job's claim, nullopt while no node has claimed it.
Result<std::optional<ClaimRead>> read_claim(ObjectStore& store, std::string_view id);

// An id or a name → the job's id: `names/NAME` first, then (for what looks like an id) the
// id's spec. kNotFound says that no fleet job has that name or id.
Result<std::string> resolve_job(ObjectStore& store, std::string_view ref);

// What `fleet status` shows for a claim: queued (none), running, or how it ended.
std::string job_state(const std::optional<Claim>& claim);

// ---- Submit

struct SubmitResult {
  FleetJob job;           // as stored (for an existing job: the stored one)
  bool existing = false;  // a job of that name with the same work was already there
  bool repaired = false;  // a half-done earlier submit was finished (spec or entry written)
};
// Submits `job` (id, submitted_ms, spec and exactly one of klass and node set by the caller).
// With a name: `names/NAME` is created if absent; if it exists and its job has the same work
// (same_fleet_work; a pinned job moved to another node still counts as the same), the result
// is that job with `existing` (its missing queue entry written if it never started); other work
// is kConflict naming the job; a name without a spec is finished under the name's id. Then
// spec.json, the queue entry ({"id"}) and a new signal. Every `after` target must name an
// existing fleet job (kNotFound otherwise). Names, class and node are checked (check_name).
Result<SubmitResult> submit(ObjectStore& store, FleetJob job);

// ---- Show

struct JobView {
  FleetJob job;
  std::optional<Claim> claim;
  std::string state;              // job_state(claim)
  bool cancel_requested = false;  // jobs/ID/cancel exists
  std::vector<OutputRecord> outputs;  // jobs/ID/outputs.json: each declared output pushed
};
Result<JobView> show(ObjectStore& store, std::string_view ref);

// ---- Cancel

enum class CancelOutcome {
  kCancelled,  // no node had it: its claim now says cancelled, its entry is gone
  kRequested,  // a node holds it: that node stops it and writes `cancelled`
};
// Writes jobs/ID/cancel; if no node has claimed the job, creates its claim with state
// cancelled (node "", attempt 0) and, when that create wins, removes the queue entry and
// writes ended/MS-ID; then a new signal. A job that already ended is kFailedPrecondition naming
// its state.
Result<CancelOutcome> cancel(ObjectStore& store, std::string_view id, int64_t now_ms);

// ---- Nodes

struct NodeStatus {
  std::string name;
  bool has_heartbeat = false;
  bool stale = true;             // no heartbeat, or one older than kStaleIntervals intervals
  int64_t heartbeat_age_ms = -1;  // by the store's clock; -1 when unknown
  int64_t interval_ms = 0;
  std::string version;
  int gpus = 0;
  int free_gpus = 0;
  std::vector<std::string> classes;
  std::vector<std::string> running;  // fleet ids, as the heartbeat says
  bool draining = false;             // nodes/NODE/drain exists, or the heartbeat says so
  std::vector<HeartbeatGpu> gpu_list;  // each GPU as the heartbeat says (usage -1: unknown)
  int64_t workdir_free_bytes = -1;     // free space of the node's [fleet] workdir; -1 unknown
  int64_t shm_free_bytes = -1;         // of /dev/shm
  int64_t min_free_disk_bytes = 0;     // the node's [fleet] min_free_disk (0: no floor known)
  bool low_disk = false;               // the workdir has less free space than min_free_disk
  std::string not_taking;              // why the node takes no new jobs, as it says; "" when it does
};
// Every node that has a heartbeat or a drain marker, in name order.
Result<std::vector<NodeStatus>> read_nodes(ObjectStore& store);
// One node; kNotFound when it has neither, naming the nodes there are.
Result<NodeStatus> read_node(ObjectStore& store, std::string_view node);

// Where `gpuq fleet submit --node TEXT` pins a job: a node, and perhaps one of its GPUs.
struct NodeTarget {
  std::string node;
  std::optional<int> gpu;  // K of "NODE-gpuK"
};
// TEXT is a node's name, unless it ends in "-gpuK", no node has that whole name (no heartbeat
// or drain marker) and a node NODE has: then it is GPU K of NODE. A GPU that NODE's heartbeat
// does not list is kInvalidArgument naming the GPUs it has. A name known to neither stays the
// node's name (a node that has not started yet). Lists nodes/TEXT/ and, for "-gpuK", nodes/NODE/.
Result<NodeTarget> resolve_node_target(ObjectStore& store, std::string_view text);

// `on`: writes nodes/NODE/drain (the node takes no new jobs; running ones finish); a node with
// neither heartbeat nor marker is kNotFound (a typo must not drain nothing). Off: removes it.
// Then a new signal.
Status drain(ObjectStore& store, std::string_view node, bool on);

// ---- Move (docs/fleet.md, "Protocol", "Move")

struct MovedEntry {
  enum class Action {
    kMoved,      // was waiting: now pinned to `to`
    kTakenOver,  // its claim on the stale `from` was fenced and removed, then moved
    kCleaned,    // it had ended: the leftover entry was removed
    kCancelled,  // a cancel was asked and no node had it: ended as cancelled instead
    kSkipped,    // left where it is; `detail` says why
  };
  std::string id;
  std::string name;
  Action action = Action::kSkipped;
  std::string detail;
};
std::string_view to_string(MovedEntry::Action action);
// Moves the jobs pinned to `from` to `to` (a node with a fresh heartbeat). Waiting jobs move;
// a job running on `from` moves only when `from` is stale and its claim was not renewed for as
// long; ended ones are cleaned. One signal at the end when anything changed.
Result<std::vector<MovedEntry>> move_pinned(ObjectStore& store, std::string_view from,
                                            std::string_view to, int64_t now_ms);

// ---- Status

struct JobStatus {
  std::string id;
  std::string name;
  std::string state;   // queued, running, succeeded, failed, cancelled
  std::string klass;   // its class queue; "" when pinned
  std::string node;    // the holder when claimed, else the node it is pinned to; "" for none
  std::string queue;   // the entry's queue prefix ("queues/class/any/"), or "ended/"
  int priority = kPriorityNormal;
  int64_t submitted_ms = 0;
  int attempt = 0;
  int runs = 0;
  std::optional<int> exit_code;
  int64_t ended_ms = 0;  // from ended/MS-ID; 0 while in a queue
  bool cancel_requested = false;  // read while a node holds the job
  std::string reason;    // the claim's reason, or why the job could not be read
  int gpus = 0;          // GPUs it asks for (its spec)
  std::optional<int> gpu;  // the one GPU of its node it is pinned to (pinned_gpu)
};
// How many entries a queue has, and how many of them `status` read and shows.
struct QueueCount {
  std::string queue;  // "queues/class/any/"
  size_t entries = 0;
  size_t shown = 0;
};
struct StatusOptions {
  size_t queued_rows = kQueuedRows;  // waiting entries read and shown; 0: every one
};
struct FleetStatus {
  std::vector<NodeStatus> nodes;
  // The queue entries shown (best first per queue), then the latest ends.
  std::vector<JobStatus> jobs;
  std::vector<QueueCount> queues;  // every queue that has entries, in key order
  size_t not_shown = 0;            // queue entries left out (StatusOptions::queued_rows)
};
// One LIST of nodes/ and a GET per heartbeat; one LIST of queues/ (a page per 1,000 entries);
// the spec and claim of each row shown (and the cancel marker of a held one); one LIST of
// ended/. No request per entry that is not shown.
Result<FleetStatus> status(ObjectStore& store, const StatusOptions& options = {});

// ---- Logs

struct LogRead {
  std::string key;
  int attempt = 0;
  Object object;  // not_modified when `if_none_match` still matched
};
// The log of `attempt` (0: the claim's current attempt). kFailedPrecondition while no node has
// claimed the job; kNotFound while that attempt has no log yet.
Result<LogRead> read_log(ObjectStore& store, std::string_view id, int attempt,
                         const std::string& if_none_match = "");

}  // namespace gpuq::fleet
