// SPDX-License-Identifier: Apache-2.0
// The queue's vocabulary: jobs, runs and resources, their states, and which state changes
// are legal. Plain values owned by whoever holds them; no I/O, no clock; thread-safe as values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/step.h"

namespace gpuq {

enum class JobState { kPending, kHeld, kRunning, kSucceeded, kFailed, kCancelled, kBlocked, kSkipped };

// kNotStarted: the run was recorded but its shim never let the job begin (the daemon died in
// between); kLost: its shim vanished without saying how the job ended.
enum class RunOutcome {
  kRunning,
  kSucceeded,
  kFailed,
  kTimedOut,
  kCancelled,
  kPreempted,
  kLost,
  kNotStarted
};

enum class ResourceState { kFree, kBusy };

// What may happen to a running job when a better job needs its GPUs (DESIGN.md §2):
//   yield    gpuq creates $GPUQ_YIELD_FILE; the job saves its state and exits 75; it is
//            requeued in its place and its next run sees GPUQ_RESUME=1;
//   restart  the run is stopped (SIGTERM, grace, SIGKILL) and the job requeued from scratch,
//            only while the run is younger than `restart_within` when that is set;
//   never    never interrupted (the default).
enum class PreemptMode { kNever, kYield, kRestart };

// Why the daemon stopped a run, when it did: a person cancelled the job, its run timed out, or
// a better job preempted it (restart mode, or a yield that missed its deadline).
enum class StopReason { kNone, kCancel, kTimeout, kPreempt };

// The exit status by which a job says "I saved my state and yielded".
constexpr int kYieldExitCode = 75;

std::string_view to_string(JobState state);
std::string_view to_string(RunOutcome outcome);
std::string_view to_string(ResourceState state);
std::string_view to_string(PreemptMode mode);
Result<PreemptMode> parse_preempt_mode(std::string_view text);  // "yield" | "restart" | "never"
Result<JobState> parse_job_state(std::string_view text);
Result<RunOutcome> parse_run_outcome(std::string_view text);
std::string_view to_string(StopReason reason);  // "", "cancel", "timeout", "preempt"
Result<StopReason> parse_stop_reason(std::string_view text);

// True for succeeded, failed, cancelled, skipped: the job will not run again by itself.
bool is_terminal(JobState state);

// Whether the queue may move a job from `from` to `to` (e.g. pending→running, running→pending
// after a lost run); every state change in the daemon goes through this check.
bool is_legal_transition(JobState from, JobState to);

// The GPU lane, which every job holding GPUs is in (config.toml's lanes name it in `excludes`:
// config::kGpuLane is the same name). A job spec never keeps it among its lanes: a request that
// names it asks for a GPU (spec_json.h).
inline constexpr std::string_view kGpuLaneName = "gpu";

// Priority names: high=10, normal=50, low=90; or an integer 0..1000. Lower runs first.
constexpr int kPriorityHigh = 10;
constexpr int kPriorityNormal = 50;
constexpr int kPriorityLow = 90;
Result<int> parse_priority(std::string_view text);

// What a job waits for before it may start (DESIGN.md §2, "Dependencies").
struct Dependency {
  enum class Kind {
    kAfterOk,     // job `target` succeeded (or was skipped: its work is done)
    kAfterAny,    // job `target` finished, whatever the outcome
    kAfterNotOk,  // job `target` failed or was cancelled
    kFile,        // path `target` exists
    kRequires,    // shell test `target` exits 0 (REQUIRES)
  };
  Kind kind = Kind::kAfterOk;
  std::string target;  // a job id or name, a path, or a shell command
  int64_t job_id = 0;  // for job kinds: the resolved id (set by the daemon at submit)
  bool operator==(const Dependency& o) const { return kind == o.kind && target == o.target; }
  // Whether it waits on another job (after-ok, after-any, after-not-ok), not a file or a test.
  bool on_job() const {
    return kind == Kind::kAfterOk || kind == Kind::kAfterAny || kind == Kind::kAfterNotOk;
  }
};

std::string_view to_string(Dependency::Kind kind);

// When a container job's image is pulled (docs/jobs.md, "Containers"): when the runtime does
// not have it (the default), before every run, or never (a missing image fails the job).
enum class PullPolicy { kMissing, kAlways, kNever };
std::string_view to_string(PullPolicy policy);  // "missing" | "always" | "never"
Result<PullPolicy> parse_pull_policy(std::string_view text);

// What to run and where: everything a submit fixes about a job.
struct JobSpec {
  std::string name;                        // optional, unique among jobs when set
  int gpus = 0;                            // GPUs to hold while running (0 = none)
  int priority = kPriorityNormal;
  std::string cwd;                         // absolute working directory
  std::map<std::string, std::string> env;  // the environment of the run, before gpuq's variables
  std::vector<std::string> argv;           // a command; empty when `script` is set
  std::string script_name;                 // the submitted script's path, for people
  std::string script_text;                 // the script's content, snapshotted at submit
  std::vector<std::string> script_args;    // arguments after the script
  // A job with steps (docs/jobs.md, "Steps"): run in order in one run; `argv` and the script
  // are empty then.
  std::vector<JobStep> steps;
  // Containers (docs/jobs.md, "Containers"): the image the job (or each step without its
  // own) runs in; "" runs on the host.
  std::string image;
  PullPolicy pull = PullPolicy::kMissing;
  std::string container_user;              // --user inside; "": the submitter's uid:gid

  std::vector<Dependency> deps;            // all must hold before a start
  std::string done_if;                     // DONE_IF shell test; empty when none
  std::vector<std::string> lanes;          // named lanes it holds one unit of while running
  int retries = 0;                         // automatic reruns after a failed run
  int64_t retry_delay_ms = -1;             // first delay before a retry; -1: the daemon's default
  int64_t timeout_ms = 0;                  // 0: none; else SIGTERM, grace, SIGKILL, timed-out
  int64_t estimate_ms = 0;                 // expected run time; 0: unknown
  int64_t gpu_mem_mib = 0;                 // free memory needed on each GPU; 0: whole GPUs
  bool share = false;                      // may share GPUs with other sharing jobs
  int64_t not_before_ms = 0;               // do not start before this wall-clock time
  bool hold = false;                       // submitted held: starts after `gpuq release`
  std::string reservation;                 // reserved GPU set it must run on (plan groups)
  PreemptMode preempt = PreemptMode::kNever;
  int64_t restart_within_ms = 0;           // restart mode: only while a run is younger; 0: always
  // Watchers (daemon/watchers.h): -1 takes the daemon's [watch] setting; 0 turns it off.
  int64_t requires_warn_ms = -1;           // job.requires_wait after a condition is false this long
  int64_t quiet_ms = -1;                   // job.quiet after the log is silent this long
  int64_t warn_after_ms = 0;               // job.overdue past this run time; 0: estimate × factor
  std::vector<std::string> inputs;         // declared `gpuq-in:` paths (for the fleet)
  std::vector<std::string> outputs;        // declared `gpuq-out:` paths
  // A fleet job reclaimed after its node died first pulls what earlier attempts pushed and
  // runs with GPUQ_RESUME=1; `# gpuq-resume: no` (false) starts it afresh instead.
  bool resume = true;
  std::string source;                      // where it was declared ("plan.json:12"), for messages
  std::string fleet_id;                    // the fleet job it runs (docs/fleet.md); "" for local jobs
  // Set by the fleet agent on the local job of a reclaimed attempt whose earlier outputs it
  // pulled: the job's first run has GPUQ_RESUME=1 (docs/fleet.md, "Resume elsewhere").
  bool fleet_resume = false;
  // Set by the node's fleet agent only: the file holding the deadline by which the run's claim
  // must have been renewed (model/claim_deadline.h); the run's shim stops the run once it has
  // passed. "" for local jobs: they run as long as they run.
  std::string claim_deadline_file;
  // The login name of the submitter, recorded by the daemon (never taken from a request body):
  // the unix socket peer's; else the daemon's own (TCP, a fleet job without a submitter); ""
  // for jobs of older daemons. Not part of same_work.
  std::string user;
};

// Whether any of the job runs in a container: the job's image, or a step's own.
bool uses_image(const JobSpec& spec);

// Whether two specs describe the same work, for idempotent submits by name: everything that
// changes what runs or when, not where it was declared or the submitter's environment.
bool same_work(const JobSpec& a, const JobSpec& b);

struct Run {
  int64_t id = 0;
  int64_t job_id = 0;
  int number = 0;                  // 1 for the first attempt
  std::vector<std::string> gpus;   // resource names held
  std::vector<int> gpu_indices;    // their device indices (those that have one)
  int64_t started_at_ms = 0;
  int64_t ended_at_ms = 0;         // 0 while running
  std::optional<int> exit_code;
  std::optional<int> signal;
  RunOutcome outcome = RunOutcome::kRunning;
  int shim_pid = 0;
  uint64_t shim_start_ticks = 0;   // /proc/PID/stat start time, to tell pid reuse apart
  std::string run_dir;
  StopReason stop_reason = StopReason::kNone;  // why the daemon stopped it, if it did
  std::optional<bool> verified;    // DONE_IF after exit 0: held (true) or not (false)
  std::string run_id;              // the cleanup marker GPUQ_RUN_ID of this run
  std::optional<int64_t> peak_gpu_mem_mib;  // the most GPU memory (per GPU) the probe saw
  int64_t preempted_by = 0;        // the job whose start preempts (or preempted) this run
  int64_t preempt_deadline_ms = 0; // yield: when the stop turns into SIGTERM; 0 when none
  std::string boot_id;             // the boot it started in; "" for runs of older daemons
  std::string log_note;            // why output.log may lack output; "" when it is whole
  // The GPUs the probe saw the run's processes on (names, and device indices of those that
  // have one), which may differ from `gpus` when a job ignores CUDA_VISIBLE_DEVICES.
  std::vector<std::string> seen_gpus;
  std::vector<int> seen_gpu_indices;
  // What the run's own cgroup accounted for (docs/containment.md): CPU time of all its
  // processes, and their peak memory where the memory controller is enabled. Unset for runs
  // without a cgroup (the marker sweep), and until the run's cleanup is confirmed.
  std::optional<int64_t> cpu_usec;
  std::optional<int64_t> peak_memory_bytes;
  // A job with steps: the step this run began at (earlier ones were done by earlier runs), and
  // what each step from there did so far (by index; those not reached are absent).
  int first_step = 0;
  std::vector<StepRun> steps;
};

// One utilisation sample of a running run (at most one per 30 s): the mean utilisation of its
// GPUs (-1 unknown) and the GPU memory its processes used, summed over its GPUs.
struct RunSample {
  int64_t time_ms = 0;
  int util = -1;
  int64_t mem_mib = 0;
  bool operator==(const RunSample&) const = default;
};

struct Job {
  int64_t id = 0;
  JobSpec spec;
  JobState state = JobState::kPending;
  std::string reason;              // why it waits or why it ended, for people
  int64_t submitted_at_ms = 0;
  int64_t finished_at_ms = 0;
  int64_t queue_order = 0;         // FIFO key within a priority
  int lost_count = 0;              // runs lost to a vanished shim (a power cut)
  int64_t retry_at_ms = 0;         // a retry waits until then
  int retry_base = 0;              // runs up to this number do not count against `retries`
  int64_t conditions_false_since_ms = 0;  // pending: its REQUIRES/file conditions false since
  int64_t array_id = 0;            // the array (JobArray) it is an element of; 0 for a job alone
  // `gpuq retry --from-start`: the next run of a job with steps begins at step 0 even where an
  // earlier run left steps done. Cleared by that run's start.
  bool steps_from_start = false;
  std::vector<Run> runs;
};

// A job array or parameter grid submitted as one unit (docs/sweeps.md): its elements are
// ordinary jobs named NAME[3] or NAME[lr=3e-4,seed=2] whose Job::array_id is this id.
struct JobArray {
  int64_t id = 0;
  std::string name;           // unique among arrays, and no job has it as its name
  std::string sweep;          // the sweep as submitted (JSON text: {"array": "0-9%2"}, ...)
  int max_running = 0;        // at most this many elements run at once; 0: no cap
  int size = 0;               // how many elements it has
  int64_t submitted_at_ms = 0;
  std::string base;  // the spec its elements were made from (JSON text); "" if not known
  bool operator==(const JobArray&) const = default;
};

// A GPU (with a device index) or the exclusive stand-in lane `gpu0` on a machine without one.
struct Resource {
  std::string name;                // "gpu0", "gpu1", ...
  std::optional<int> index;        // the device index; absent for the stand-in lane
  std::string uuid;
  std::string model;               // "NVIDIA H100 80GB HBM3", "fake"
  int64_t memory_total_mib = 0;
  int64_t memory_used_mib = 0;
};

}  // namespace gpuq
