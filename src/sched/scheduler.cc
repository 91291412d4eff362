#include "sched/scheduler.h"

#include <algorithm>
#include <fmt/format.h>

namespace gpuq::sched {

std::string WaitReason::text(const Snapshot& snapshot) const {
  auto lane_name = [&](int index) {
    return index >= 0 && index < static_cast<int>(snapshot.lanes.size()) ? snapshot.lanes[index].name
                                                                          : std::string("?");
  };
  switch (kind) {
    case Kind::kDraining: return "draining: the queue starts nothing new (gpuq undrain)";
    case Kind::kBehindBetterJobs:
      return fmt::format("behind {} better job{} waiting for GPUs (needs {})", better_jobs,
                         better_jobs == 1 ? "" : "s", needed);
    case Kind::kReservedForBetter:
      return fmt::format("would delay job {}, which has the GPUs reserved", job);
    case Kind::kLaneBusy: return fmt::format("lane {} busy with job {}", lane_name(lane), job);
    case Kind::kLaneExcluded: return fmt::format("lane {} excluded while job {} runs", lane_name(lane), job);
    case Kind::kNoGpuMemory: return fmt::format("no GPU has the memory it needs free");
    case Kind::kReservation: return "its reserved GPUs are busy";
    case Kind::kNeedsGpus:
      return fmt::format("needs {} GPU{}, {} free", needed, needed == 1 ? "" : "s", free);
  }
  return "";
}

void sort_queue(std::vector<PendingJob>& queue, Policy policy) {
  std::sort(queue.begin(), queue.end(), [policy](const PendingJob& a, const PendingJob& b) {
    if (policy != Policy::kFifo && a.priority != b.priority) return a.priority < b.priority;
    return a.queue_order < b.queue_order;
  });
}

// First cut: strict order, whole GPUs, no lanes. Replaced by the full policy.
Decision schedule(const Snapshot& snapshot) {
  std::vector<PendingJob> queue = snapshot.queue;
  sort_queue(queue, snapshot.policy);
  std::vector<int> free_gpus;
  for (const Gpu& g : snapshot.gpus) {
    if (g.usable && !g.held_exclusive && g.sharers == 0 && g.reservation < 0) free_gpus.push_back(g.slot);
  }
  Decision decision;
  size_t next_free = 0;
  int blocked_ahead = 0;
  for (const PendingJob& job : queue) {
    if (snapshot.draining) {
      decision.waits.push_back({job.id, {WaitReason::Kind::kDraining}});
      continue;
    }
    int unclaimed = static_cast<int>(free_gpus.size() - next_free);
    if (job.gpus <= unclaimed) {
      Start start{job.id, {}};
      for (int i = 0; i < job.gpus; ++i) start.slots.push_back(free_gpus[next_free++]);
      decision.starts.push_back(std::move(start));
      continue;
    }
    WaitReason reason;
    reason.needed = job.gpus;
    reason.free = unclaimed;
    if (blocked_ahead > 0 && unclaimed == 0) {
      reason.kind = WaitReason::Kind::kBehindBetterJobs;
      reason.better_jobs = blocked_ahead;
    }
    decision.waits.push_back({job.id, reason});
    next_free = free_gpus.size();
    ++blocked_ahead;
  }
  return decision;
}

}  // namespace gpuq::sched
