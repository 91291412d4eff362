// SPDX-License-Identifier: Apache-2.0
// Whether a job just submitted starts at once, in its submit's own transaction (queue_submit.cc):
// the one decision the next pass would make, taken early, so that an idle machine serves a
// submit with one fsync instead of two and without waiting a turn for its pass.
#include "daemon/queue.h"

namespace gpuq::daemon {

std::optional<sched::Start> Queue::start_at_submit(const ActiveJob& job) {
  // Anything else still to decide (a pass asked for, the store failing, a ready job waiting for
  // GPUs, a job whose time has come) may come before this job: the pass decides among them.
  if (stopping_ || trouble_ || pass_requested_ || draining_) return std::nullopt;
  int64_t now = world_.now_ms();
  if (ready_index_.ready_count() != 0) return std::nullopt;
  if (ready_index_.marked_count() > (ready_index_.marked(job.id) ? 1 : 0)) return std::nullopt;
  if (int64_t wake = ready_index_.next_wake_ms(); wake != 0 && wake <= now) return std::nullopt;
  Readiness readiness = job_readiness(job, now, [this](int64_t other) { return state_of(other); });
  if (readiness.kind != Readiness::Kind::kReady) return std::nullopt;
  sched::Snapshot snapshot = machine_snapshot(now);
  users_.observe_running(snapshot.running, now);
  snapshot.owners = users_.owners(now);
  snapshot.fair_share = users_.settings().fair_share;
  snapshot.queue.push_back(ReadyIndex::pending_job(job));
  snapshot.queue_in_priority_order = true;
  snapshot.queue_has_one_owner = true;
  sched::Decision decision = sched::schedule(snapshot);
  if (decision.starts.size() != 1 || decision.starts[0].job_id != job.id) return std::nullopt;
  return decision.starts[0];
}

}  // namespace gpuq::daemon
