// The pure scheduler: given a snapshot of free resources and the pending queue, decide which
// jobs start now on which resources, and why each other job waits. It never touches the store,
// the clock or the OS; the daemon applies its decisions and the simulator can replay it.
// Thread-safe: no state.
//
// Policy (first cut): strict priority (lower number first), FIFO within a priority by
// queue order. A job starts when enough GPUs are free and no better job is waiting for them:
// a job that does not fit claims the free GPUs it would need, so smaller jobs behind it cannot
// starve it. Jobs that need no GPU never wait for GPUs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuq::sched {

struct PendingJob {
  int64_t id = 0;
  int priority = 50;
  int64_t queue_order = 0;  // FIFO key within a priority
  int gpus = 0;
};

struct Snapshot {
  int total_gpus = 0;             // resources that exist, busy or not
  std::vector<int> free_gpus;     // slots (indices into the daemon's resource list) free now
  std::vector<PendingJob> queue;  // must be sorted by (priority, queue_order)
  bool draining = false;          // start nothing new
};

// Why a job waits, compactly; text() renders it for people.
struct WaitReason {
  enum class Kind { kNeedsGpus, kBehindBetterJobs, kDraining };
  Kind kind = Kind::kNeedsGpus;
  int needed = 0;        // GPUs the job needs
  int free = 0;          // GPUs free (not claimed by better jobs) when it was considered
  int better_jobs = 0;   // better jobs waiting for GPUs ahead of it
  std::string text() const;
};

struct Start {
  int64_t job_id = 0;
  std::vector<int> slots;  // resource slots to hold, taken from Snapshot::free_gpus
};

struct Wait {
  int64_t job_id = 0;
  WaitReason reason;
};

struct Decision {
  std::vector<Start> starts;
  std::vector<Wait> waits;  // one per pending job that does not start
};

// Sorts a queue into scheduling order.
void sort_queue(std::vector<PendingJob>& queue);

Decision schedule(const Snapshot& snapshot);

}  // namespace gpuq::sched
