// SPDX-License-Identifier: Apache-2.0
// gpuq's settings file, $GPUQ_HOME/config.toml: the lanes (named counters such as `net` and
// `cpu`, with capacities and exclusions), the scheduling policy, retry backoff, the timings of
// runs and REQUIRES checks, the watchers' limits and the event hooks. The daemon reads it once
// at start; `gpuq simulate` reads its lanes and policy. Every setting has a default, so a
// machine without the file runs with the defaults.
//
// Reading is strict, because a setting silently ignored is a queue that misbehaves for days: a
// syntax error, an unknown table or key, a value of the wrong type or out of range is an error
// whose message starts with `path:line:column:` and says how to fix it. Values are plain and
// copyable; the functions hold no state and are thread-safe. Durations are quoted strings in
// base/duration.h's forms ("250ms", "10s", "5m", "1h30m"), at most 30 days.
//
//   [lanes.net]
//   capacity = 1
//   excludes = ["gpu"]             # a download and GPU work never run at the same time
//   [lanes.cpu]
//   capacity = 2
//
//   [scheduler]
//   policy = "backfill"            # fifo | priority | backfill
//   backfill_unknown_limit = "0s"  # jobs without an estimate backfill only before
//                                  # reservations this far off
//   [retries]
//   delay = "10s"                  # first delay; multiplied by backoff each retry
//   backoff = 2.0
//   max_delay = "1h"
//
//   [runs]
//   kill_grace = "10s"             # SIGTERM to SIGKILL
//   requires_timeout = "30s"       # one REQUIRES / DONE_IF check
//   requires_poll = "5s"           # first recheck of a false REQUIRES / file dependency
//   requires_poll_max = "5m"       # backoff cap
//   max_log = "2GiB"               # one run's output.log is cut there, with a line saying so
//                                  # (KiB/MiB/GiB: powers of 1024; "0": no cap)
//   max_not_started = 5            # runs in a row that never began (the daemon died before
//                                  # letting them go) before the job is held (1..1000)
//
//   [retention]
//   keep = "30d"                   # finished jobs older than this are pruned, with their runs,
//                                  # run directories and events ("forever": never)
//
//   [preemption]
//   gap = 40                       # a job preempts only runs whose priority is worse by this
//   yield_grace = "5m"             # how long a yield may take before SIGTERM
//
//   [cleanup]
//   poll = "10ms"                  # between the two empty scans that free a GPU after a run
//   limit = "2m"                   # unconfirmed by then: the GPU goes to attention
//
//   [cgroup]                       # containment of runs (docs/containment.md)
//   root = "/sys/fs/cgroup/gpuq"   # unset: the daemon's own cgroup when delegated; "off"
//
//   [sweeps]                       # job arrays and grids (docs/sweeps.md)
//   max_elements = 10000           # a larger sweep is refused with its count (1..1000000)
//
//   [containers]                   # container jobs and steps (docs/containers.md)
//   runtime = "podman"             # "docker" | "podman"; unset: whichever is on PATH, docker first
//   extra_args = ["--runtime", "runc"]  # added to every `RUNTIME run`, after `run`
//
//   [gpu]
//   probe_interval = "10s"         # how often the GPU probe reads usage and processes
//   foreign_repeat = "10m"         # resource.foreign is repeated this often while it lasts
//   foreign_memory_mib = 1024      # used memory with no process listed: foreign (0 = off)
//
//   [watch]                        # watchers: every kind of waiting has an event (0s = off)
//   interval = "10s"               # how often logs and GPU use are looked at
//   repeat = "30m"                 # a lasting condition's event is repeated this often
//   heartbeat = "30s"              # how often the daemon writes its heartbeat to the store
//   requires_warn = "1h"           # job.requires_wait: a condition false this long
//   quiet = "0s"                   # job.quiet: a running job's log silent this long
//   overdue_factor = 2.0           # job.overdue: a run past its estimate times this (0 = off)
//   gpu_idle = "30m"               # job.gpu_idle: its GPUs idle and its log silent this long
//   gpu_idle_utilization = 5       # percent at or below which a GPU counts as idle
//   idle_with_work = "10m"         # queue.idle_with_work: GPUs free while jobs wait this long
//   empty = "0s"                   # queue.empty: nothing running or queued this long
//
//   [http]                         # the TCP listener of the API and the dashboard
//   listen = "127.0.0.1:7878"      # ADDR:PORT ([::1]:7878; port 0: any free one) or "off"
//   allowed_hosts = ["box.lan"]    # Host header names accepted besides localhost and ADDR
//   allow_submit = false           # POST /v1/jobs and /v1/plans over TCP
//
//   [[hook]]                       # one per hook, any number (docs/hooks.md)
//   name = "slack"                 # the cursor's key; default "url-" or "command-" and a digest
//   events = ["job.*"]             # fnmatch(3) globs against the event kind (default ["*"])
//   url = "https://example.com/x"  # POST the event JSON; or command = "..." (sh -c, the event
//                                  # JSON on stdin and as GPUQ_EVENT_* variables)
//   timeout = "30s"                # one delivery
//   retry_min = "1s"               # first retry delay, doubled after each failure
//   retry_max = "5m"               # the longest retry delay
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::config {

// The file's name inside the daemon's home directory.
inline constexpr std::string_view kConfigFileName = "config.toml";

constexpr int kMaxLaneCapacity = 1'000'000;

struct LaneConfig {
  std::string name;                   // [a-z0-9_-]+, neither "gpu" nor a GPU's name ("gpu3")
  int capacity = 1;                   // jobs holding the lane at once, >= 1
  std::vector<std::string> excludes;  // other lanes, or "gpu" for any job holding GPUs
};

// [watch]: the limits of the watchers (daemon/watchers.h); a limit of 0 turns its watcher off.
struct WatchConfig {
  int64_t interval_ms = 10'000;            // > 0
  int64_t repeat_ms = 1'800'000;           // > 0
  int64_t heartbeat_ms = 30'000;           // > 0
  int64_t requires_warn_ms = 3'600'000;
  int64_t quiet_ms = 0;
  double overdue_factor = 2.0;             // 0 or >= 1
  int64_t gpu_idle_ms = 1'800'000;
  int64_t gpu_idle_utilization = 5;        // 0..100
  int64_t idle_with_work_ms = 600'000;
  int64_t empty_ms = 0;
};

// [[hook]]: where events are delivered (daemon/hooks.h). Exactly one of command and url is set.
struct HookConfig {
  std::string name;                          // unique; the key of the hook's stored cursor
  std::vector<std::string> events = {"*"};   // fnmatch(3) globs against Event::kind
  std::string command;                       // run with /bin/sh -c
  std::string url;                           // http:// or https://
  int64_t timeout_ms = 30'000;               // > 0
  int64_t retry_min_ms = 1'000;              // > 0
  int64_t retry_max_ms = 300'000;            // >= retry_min_ms
};

// [fleet] (docs/fleet.md): the daemon's fleet agent and `gpuq fleet`'s store. Empty strings
// are unset: flags and the AWS_* variables fill them.
struct FleetConfig {
  std::string url;                    // s3://BUCKET/PREFIX or dir:///PATH (else $GPUQ_FLEET, --fleet)
  std::string node;                   // this node's name (else --node, else the host name)
  std::vector<std::string> classes;   // served besides "any" (else --classes)
  int64_t heartbeat_ms = 30'000;
  int64_t poll_ms = 2'000;
  int64_t lease_ms = 60'000;
  int64_t sync_every_ms = 120'000;
  int64_t timeout_ms = 20'000;        // one request to the store
  int64_t part_size = int64_t{64} << 20;  // multipart uploads above this; parts this big
  int transfers = 4;                  // parts or ranges of one file in flight at once
  std::string workdir;                // where fleet jobs run (default: the daemon user's home)
  // The node takes no new fleet job while its workdir has less free space than this; 0: no floor.
  int64_t min_free_disk_bytes = int64_t{10} << 30;
  std::string data;                   // a store URL for declared data (default: PREFIX/data/)
  std::string endpoint, region, access_key_id, secret_access_key, session_token;
};

// [http] (docs/api.md, "HTTP listener and the dashboard"): the daemon's TCP listener. A
// `--http` flag replaces `listen`.
struct HttpConfig {
  std::string listen;                      // empty: unset (the default, 127.0.0.1:7878); "off"
  std::vector<std::string> allowed_hosts;  // Host header names besides localhost and the listen host
  bool allow_submit = false;               // POST /v1/jobs and /v1/plans over TCP
};

// [containers] (docs/containers.md): how container jobs and steps run. The runner finds the
// binary (runner/container_runtime.h); the config only names it.
struct ContainersConfig {
  std::string runtime;                  // "docker" | "podman"; "": whichever is on PATH, docker first
  std::vector<std::string> extra_args;  // after `RUNTIME run`, before gpuq's own arguments
};

// [users] (a box many people share, docs/lab.md): who may use the system daemon, who may act on
// every job, fair share between users, and per-user limits. Read and checked here; the daemon
// does not use it yet.
struct UserLimits {
  std::optional<int64_t> max_gpus;     // GPUs a user's running jobs may hold at once
  std::optional<int64_t> max_running;  // running jobs
  std::optional<int64_t> max_queued;   // unfinished jobs (pending, held, blocked, running)
  bool operator==(const UserLimits&) const = default;
};
struct UsersConfig {
  std::string group = "gpuq";          // the system socket's group: its members may use it
  std::vector<std::string> admins;     // login names, or "@group" for a group's members
  bool fair_share = true;              // within a priority, the least recent usage first
  int64_t fair_share_half_life_ms = 7LL * 24 * 3'600'000;
  UserLimits limits;                   // every user's, unless overridden
  std::map<std::string, UserLimits> per_user;  // [users.NAME]: what is set replaces `limits`'
};
// The most a user limit may be.
constexpr int64_t kMostUserLimit = 1'000'000;

struct Config {
  std::vector<LaneConfig> lanes;    // sorted by name
  std::string policy = "backfill";  // "fifo" | "priority" | "backfill"
  int64_t backfill_unknown_limit_ms = 0;
  int64_t retry_delay_ms = 10'000;
  double retry_backoff = 2.0;              // >= 1
  int64_t retry_max_delay_ms = 3'600'000;  // >= retry_delay_ms
  int64_t kill_grace_ms = 10'000;
  int64_t requires_timeout_ms = 30'000;    // > 0
  int64_t requires_poll_ms = 5'000;        // > 0
  int64_t requires_poll_max_ms = 300'000;  // >= requires_poll_ms
  int64_t max_log_bytes = int64_t{2} << 30;  // 0: no cap
  int max_not_started = 5;                   // [runs] max_not_started, 1..kMostNotStarted
  int64_t retention_keep_ms = 30LL * 24 * 3'600'000;  // 0: forever
  int preemption_gap = 40;                 // 1..1000
  int64_t yield_grace_ms = 300'000;        // > 0
  int64_t cleanup_poll_ms = 10;            // > 0
  int64_t cleanup_limit_ms = 120'000;      // > cleanup_poll_ms
  int64_t probe_interval_ms = 10'000;      // > 0
  int64_t foreign_repeat_ms = 600'000;     // > 0
  int64_t foreign_memory_mib = 1024;       // 0: off
  WatchConfig watch;
  std::vector<HookConfig> hooks;  // in file order
  FleetConfig fleet;
  HttpConfig http;
  // [cgroup] root: "" contains runs in the daemon's own cgroup where systemd delegated it,
  // "off" keeps the marker sweep, a directory uses that cgroup v2 subtree (docs/containment.md).
  std::string cgroup_root;
  int64_t sweeps_max_elements = 10'000;  // [sweeps] max_elements, 1..kMostSweepElements
  ContainersConfig containers;
  UsersConfig users;
};

// The largest `[runs] max_not_started`: the rule bounds a loop of daemon deaths; it cannot be off.
constexpr int kMostNotStarted = 1000;

// The most elements `[sweeps] max_elements` may allow (the CLI checks a sweep's form with it).
constexpr int64_t kMostSweepElements = 1'000'000;

// Parses config.toml's text; `name` (usually the file's path) names it in messages. Never
// throws, whatever the text: anything wrong is Code::kInvalidArgument with a message
// "name:line:column: what is wrong; how to fix it".
Result<Config> parse_config(std::string_view text, std::string_view name);

// What load_config does when nothing is at the path: the daemon's home may have no
// config.toml (the defaults apply), while a file someone named must exist.
enum class IfMissing { kDefaults, kError };

// Reads the file at `path` and parses it (parse_config, named by `path`). A missing file gives
// Config{} (the defaults), or with IfMissing::kError a kNotFound error naming the path. A file
// that cannot be read is an errno_error naming the path (kFailedPrecondition for a permission,
// else kIoError).
Result<Config> load_config(const std::string& path, IfMissing if_missing = IfMissing::kDefaults);

}  // namespace gpuq::config
