// The pure scheduler: given a snapshot of the machine (GPUs, lanes, running jobs with their
// expected ends) and the queue of jobs that are *eligible* to start (their dependencies,
// holds and not-before times are the daemon's business and already satisfied), decide which
// jobs start now on which GPUs, and why each other job waits. It never touches the store, the
// clock or the OS: the daemon applies its decisions, and the simulator (src/sim) replays the
// same function on a virtual clock. Thread-safe: no state.
//
// Policy (docs/scheduling.md):
//  - order: priority (lower first), then queue order (FIFO within a priority);
//  - a job starts when its GPUs, lanes and memory are available and doing so does not delay
//    the reserved start of any better job that waits (backfill); with Policy::kPriority a job
//    that does not fit blocks every worse job from the resources it needs (no backfill), and
//    with Policy::kFifo priorities are ignored too;
//  - lanes are counters with a capacity; a lane may exclude other lanes or the pseudo-lane
//    "gpu" (any job holding GPUs), so that e.g. downloads and GPU work never overlap;
//  - multi-GPU jobs go to the best-connected free GPUs; one-GPU jobs are placed so that
//    well-connected pairs stay whole;
//  - a job with gpu_mem only goes to GPUs with that much free memory; jobs that `share` may
//    run together on one GPU while their memory fits;
//  - GPUs reserved for a group (plan `reservations`) take only that group's jobs, and those
//    jobs run only there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuq::sched {

enum class Policy { kFifo, kPriority, kBackfill };

struct Gpu {
  int slot = 0;                   // the daemon's index for this GPU (returned in Start::slots)
  bool usable = true;             // false: draining, foreign or in attention — place nothing
  int64_t memory_total_mib = 0;
  int64_t memory_free_mib = 0;    // as far as the scheduler knows (probe, minus sharing jobs)
  bool held_exclusive = false;    // a running job holds it whole
  int sharers = 0;                // running jobs sharing it
  int reservation = -1;           // index into Snapshot::reservations, or -1
};

struct Lane {
  std::string name;
  int capacity = 1;
  int used = 0;                        // units held by running jobs
  std::vector<std::string> excludes;   // lane names, or "gpu"; exclusion is symmetric
};

struct RunningJob {
  int64_t id = 0;
  std::vector<int> slots;              // GPU slots it holds
  std::vector<int> lanes;              // indices into Snapshot::lanes
  int64_t expected_end_ms = 0;         // start + estimate (or timeout); 0 when unknown
  bool share = false;
  int64_t gpu_mem_mib = 0;
};

struct PendingJob {
  int64_t id = 0;
  int priority = 50;
  int64_t queue_order = 0;             // FIFO key within a priority
  int gpus = 0;
  std::vector<int> lanes;              // indices into Snapshot::lanes
  int64_t gpu_mem_mib = 0;             // per GPU; 0 = whole GPUs
  bool share = false;
  int64_t estimate_ms = 0;             // 0 = unknown
  int64_t timeout_ms = 0;              // 0 = none; an upper bound on the run time
  int reservation = -1;                // index into Snapshot::reservations, or -1
};

struct Reservation {
  std::string name;                    // e.g. the plan's group name, for reasons
  std::vector<int> slots;              // the GPUs reserved for the group
};

struct Snapshot {
  int64_t now_ms = 0;
  std::vector<Gpu> gpus;
  // links[a][b]: how well GPU slots a and b are connected (0 = across the system, higher is
  // better: e.g. the NVLink count). Empty means "all equal".
  std::vector<std::vector<int>> links;
  std::vector<Lane> lanes;
  std::vector<Reservation> reservations;
  std::vector<RunningJob> running;
  std::vector<PendingJob> queue;       // eligible jobs; any order (schedule() sorts a copy)
  Policy policy = Policy::kBackfill;
  bool draining = false;               // start nothing new
  // A job without an estimate (or timeout) may backfill only when the better job it could
  // delay is expected to wait at least this long; 0 = such jobs never backfill.
  int64_t backfill_unknown_limit_ms = 0;
};

// Why a job waits, compactly (no strings built per job in the hot path); text() renders it.
struct WaitReason {
  enum class Kind {
    kNeedsGpus,         // needs N GPUs, F free [, next free in ~T]
    kBehindBetterJobs,  // better jobs wait for the same resources
    kReservedForBetter, // would delay the reserved start of better job `job`
    kLaneBusy,          // lane `lane` is full (held by job `job`)
    kLaneExcluded,      // an excluding lane (or GPU work) is running: job `job`
    kNoGpuMemory,       // no GPU has gpu_mem MiB free
    kReservation,       // its reserved GPUs are busy
    kDraining,
  };
  Kind kind = Kind::kNeedsGpus;
  int needed = 0;
  int free = 0;
  int better_jobs = 0;
  int lane = -1;
  int64_t job = 0;
  int64_t next_free_in_ms = -1;  // -1 = unknown
  std::string text(const Snapshot& snapshot) const;
};

struct Start {
  int64_t job_id = 0;
  std::vector<int> slots;  // GPU slots to hold
};

struct Wait {
  int64_t job_id = 0;
  WaitReason reason;
};

struct Decision {
  std::vector<Start> starts;
  std::vector<Wait> waits;  // one per queued job that does not start, in scheduling order
};

// Sorts a queue into scheduling order for `policy`.
void sort_queue(std::vector<PendingJob>& queue, Policy policy = Policy::kBackfill);

Decision schedule(const Snapshot& snapshot);

}  // namespace gpuq::sched
