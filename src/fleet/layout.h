// SPDX-License-Identifier: Apache-2.0
// The bucket's layout and the JSON of every object the fleet keeps there (docs/fleet.md,
// "Bucket layout"): which key holds what, and how each document is written and read. The
// agent, the claims and `gpuq fleet` all go through these functions, so the layout lives in
// one place. Keys are relative to the fleet's prefix:
//
//   signal                          a new value whenever a queue changes (nodes poll it, 304)
//   nodes/NODE/heartbeat.json       the node's heartbeat (Heartbeat)
//   nodes/NODE/drain                present while the node takes no new jobs
//   names/NAME                      {"id"}: created if absent, so a name is unique in the fleet
//   jobs/ID/spec.json               the job as submitted (FleetJob); only `fleet move` re-pins it
//   jobs/ID/claim.json              its lease and, at the end, its outcome (Claim)
//   jobs/ID/cancel                  present once someone asked to cancel it
//   jobs/ID/logs/ATTEMPT.log        the output of each attempt, synced while it runs
//   jobs/ID/outputs.json            each declared output pushed: size, ETag, when, state (job_data.h)
//   queues/class/CLASS/ENTRY        a waiting or running job of a class queue (QueueEntry)
//   queues/node/NODE/ENTRY          a job pinned to a node
//   ended/ENTRY                     a finished job, for `fleet status` ("recent ends")
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/job.h"

namespace gpuq::fleet {

// Node, class and job names: 1..100 of [A-Za-z0-9._-], not beginning with '.' or '-'. `what`
// ("node", "class", "name") starts the error message.
Status check_name(std::string_view what, std::string_view name);

// A new job id: the time in ms (base 36, so ids sort by submission) and 5 random base-36
// characters, e.g. "mbz7w4q0k3xa1". Ids are unique without coordination.
std::string new_job_id(int64_t now_ms);
// Whether `text` has the form of a job id (to tell `fleet show ID` from `fleet show NAME`).
bool looks_like_job_id(std::string_view text);

// A random token of 16 hex characters (claims, the signal).
std::string random_token();

namespace keys {
inline constexpr std::string_view kSignal = "signal";
inline constexpr std::string_view kNodes = "nodes/";
inline constexpr std::string_view kClassQueues = "queues/class/";
inline constexpr std::string_view kNodeQueues = "queues/node/";
inline constexpr std::string_view kEnded = "ended/";
std::string heartbeat(std::string_view node);
std::string drain(std::string_view node);
std::string name(std::string_view job_name);
std::string spec(std::string_view id);
std::string claim(std::string_view id);
std::string cancel(std::string_view id);
std::string log(std::string_view id, int attempt);
std::string outputs(std::string_view id);
std::string class_queue(std::string_view klass);  // "queues/class/CLASS/"
std::string node_queue(std::string_view node);    // "queues/node/NODE/"
}  // namespace keys

// A job's place in a queue: the key's last component is PPPP-MMMMMMMMMMMMM-ID (priority,
// submission ms, id), so a listing in key order is best priority first, then oldest.
struct QueueEntry {
  std::string key;           // the whole key, queue prefix included
  int priority = kPriorityNormal;
  int64_t submitted_ms = 0;
  std::string id;
};
std::string entry_key(std::string_view queue_prefix, int priority, int64_t submitted_ms,
                      std::string_view id);
// nullopt when `key` (under `queue_prefix`) is not an entry (a stray object is skipped).
std::optional<QueueEntry> parse_entry(std::string_view queue_prefix, std::string_view key);
// ended/MMMMMMMMMMMMM-ID: ends sort by time.
std::string ended_key(int64_t ended_ms, std::string_view id);
std::optional<std::pair<int64_t, std::string>> parse_ended_key(std::string_view key);

// A dependency on another fleet job, by name or id: afterok, afterany or afternotok.
struct FleetDep {
  Dependency::Kind kind = Dependency::Kind::kAfterOk;
  std::string target;
  bool operator==(const FleetDep&) const = default;
};

// jobs/ID/spec.json: a job as submitted. Exactly one of `klass` and `node` is set. The spec
// has no cwd (a node runs it in its [fleet] workdir) and no job dependencies (they are
// `after`, resolved in the fleet); its env holds only what the submitter gave with --env.
struct FleetJob {
  std::string id;
  std::string name;          // "" when none
  std::string klass;         // the class queue, e.g. "any"
  std::string node;          // the node it is pinned to
  int64_t submitted_ms = 0;  // the submitter's clock
  std::string submitted_by;  // user@host, for people
  JobSpec spec;
  std::vector<FleetDep> after;
  std::string queue_prefix() const;  // keys::class_queue or keys::node_queue
  std::string entry() const;         // its queue entry's key
};
nlohmann::json to_json(const FleetJob& job);
Result<FleetJob> fleet_job_from_json(const nlohmann::json& json);
// Whether a resubmit with the same name is the same job (same work, queue and dependencies).
bool same_fleet_work(const FleetJob& a, const FleetJob& b);

// The states a fleet job shows (`fleet status --json`): queued (no claim), running (claimed),
// or how it ended.
inline constexpr std::string_view kQueued = "queued";
inline constexpr std::string_view kRunning = "running";
inline constexpr std::string_view kSucceeded = "succeeded";
inline constexpr std::string_view kFailed = "failed";
inline constexpr std::string_view kCancelled = "cancelled";
bool is_final_state(std::string_view state);

// jobs/ID/claim.json: who holds the job and under which attempt (a newer attempt fences off
// an older holder), renewed by rewriting it (the ETag changes), and finally its outcome,
// written by the holder through the same conditional replace.
struct Claim {
  std::string job;
  std::string node;          // "" for a job cancelled before anyone claimed it
  int attempt = 0;           // 1 for the first claim; each reclaim adds one
  std::string token;         // the holder's random token (settles an ambiguous write)
  int64_t renewal = 0;       // counts renewals, so each rewrite differs
  std::string state = std::string(kRunning);
  std::optional<int> exit_code;
  int64_t local_id = 0;      // the job's id in the holder's daemon; 0 before it is submitted
  int runs = 0;              // runs of this attempt in the holder's daemon
  std::string reason;        // why it ended, for people
  int64_t updated_ms = 0;    // the holder's clock (for people; never compared across nodes)
  int64_t lease_ms = 0;      // the holder's lease: watchers count it expired after this long
};
nlohmann::json to_json(const Claim& claim);
Result<Claim> claim_from_json(const nlohmann::json& json);

struct HeartbeatGpu {
  std::string name;          // "gpu0"
  std::string model;
  int64_t memory_mib = 0;
  bool busy = false;
  int64_t memory_used_mib = -1;  // in use, by the daemon's last probe; -1 unknown
  int utilization = -1;          // percent 0..100; -1 unknown
};

// nodes/NODE/heartbeat.json.
struct Heartbeat {
  std::string node;
  std::string version;
  int64_t time_ms = 0;           // the node's clock, for people
  int64_t interval_ms = 30'000;  // its [fleet] heartbeat: stale after three of them
  std::vector<std::string> classes;
  std::vector<HeartbeatGpu> gpus;
  int free_gpus = 0;
  std::vector<std::string> running;  // fleet ids
  bool draining = false;
  int64_t workdir_free_bytes = -1;   // free space of its [fleet] workdir (statvfs); -1 unknown
  int64_t shm_free_bytes = -1;       // of /dev/shm
  int64_t min_free_disk_bytes = 0;   // its [fleet] min_free_disk
  std::string not_taking;            // why it takes no new jobs (low disk); "" when it does
};
nlohmann::json to_json(const Heartbeat& heartbeat);
Result<Heartbeat> heartbeat_from_json(const nlohmann::json& json);

// A job pinned to one GPU of its node (`gpuq fleet submit --node NODE-gpuK`) carries in its
// spec the reservation "fleet-gpuK": the node's daemon keeps that name as a reservation of GPU
// K alone, so the job runs on that GPU and no other (a daemon that does not know the name
// refuses the job rather than run it elsewhere).
std::string gpu_reservation(int index);
// K of a spec whose reservation is gpu_reservation(K); nullopt for any other spec.
std::optional<int> pinned_gpu(const JobSpec& spec);

// Parses an object's body as JSON; the error names the key.
Result<nlohmann::json> parse_object(std::string_view key, std::string_view body);

}  // namespace gpuq::fleet
