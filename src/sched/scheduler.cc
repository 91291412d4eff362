#include "sched/scheduler.h"

#include <algorithm>
#include <fmt/format.h>

namespace gpuq::sched {

std::string WaitReason::text() const {
  switch (kind) {
    case Kind::kDraining: return "draining: the queue starts nothing new (gpuq undrain)";
    case Kind::kBehindBetterJobs:
      return fmt::format("behind {} better job{} waiting for GPUs (needs {})", better_jobs,
                         better_jobs == 1 ? "" : "s", needed);
    case Kind::kNeedsGpus:
      return fmt::format("needs {} GPU{}, {} free", needed, needed == 1 ? "" : "s", free);
  }
  return "";
}

void sort_queue(std::vector<PendingJob>& queue) {
  std::sort(queue.begin(), queue.end(), [](const PendingJob& a, const PendingJob& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    return a.queue_order < b.queue_order;
  });
}

Decision schedule(const Snapshot& snapshot) {
  Decision decision;
  size_t next_free = 0;  // free_gpus[next_free..] are unclaimed
  int blocked_ahead = 0;
  for (const PendingJob& job : snapshot.queue) {
    if (snapshot.draining) {
      decision.waits.push_back({job.id, {WaitReason::Kind::kDraining}});
      continue;
    }
    int unclaimed = static_cast<int>(snapshot.free_gpus.size() - next_free);
    if (job.gpus <= unclaimed) {
      Start start{job.id, {}};
      for (int i = 0; i < job.gpus; ++i) start.slots.push_back(snapshot.free_gpus[next_free++]);
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
    // Claim what is free for this job so that worse jobs cannot take it first.
    next_free = snapshot.free_gpus.size();
    ++blocked_ahead;
  }
  return decision;
}

}  // namespace gpuq::sched
