// SPDX-License-Identifier: Apache-2.0
// The Queue's start: its counters and settings from the store, the machine's resources on
// record, its own state recovered (finished jobs' states, reservations, the unfinished jobs),
// then the runs an earlier daemon left (RunLifecycle::recover), and the first pass.
#include <unistd.h>

#include "daemon/queue.h"

namespace gpuq::daemon {

Status Queue::recover() {
  // Every job's state, then the unfinished ones in full.
  auto states = store_.job_states();
  if (!states) return tl::unexpected(states.error());
  // Room for both at once: growing one rehash at a time was a tenth of a restart with 200,000
  // queued.
  size_t finished = 0;
  for (const auto& entry : *states) finished += is_terminal(entry.second) ? 1 : 0;
  finished_.reserve(finished_.size() + finished);
  active_.reserve(active_.size() + (states->size() - finished));
  ready_index_.reserve(states->size() - finished);
  for (const auto& [id, state] : *states) {
    if (is_terminal(state)) finished_[id] = state;
  }
  auto reservations = store_.reservations();
  if (!reservations) return tl::unexpected(reservations.error());
  for (const auto& r : *reservations) reservations_.push_back({r.name, r.gpus});
  // One at a time, without their environments: a million queued jobs cost their ActiveJobs.
  auto tracked = store_.each_active_job([&](const Job& job) -> Status {
    auto active = make_active(job.id, job);
    if (!active) return tl::unexpected(active.error());
    track(std::move(*active));
    if (job.state == JobState::kHeld && !job.reason.empty() && job.reason != kHeldByRequest) {
      held_reasons_[job.id] = job.reason;
    }
    return ok();
  });
  if (!tracked) return tracked;
  // Reading a deep queue leaves megabytes of freed rows and specs in malloc's arenas (every
  // job's state, each job as read), and the first pass's merge of every ready job more: both
  // are given back after that pass.
  trim_after_pass_ = active_.size() > 1000;
  return runs_->recover();
}

Status Queue::start() {
  auto order = store_.max_queue_order();
  if (!order) return tl::unexpected(order.error());
  next_order_ = *order;
  auto seq = store_.last_seq();
  if (!seq) return tl::unexpected(seq.error());
  last_seq_ = *seq;
  // The all-time counters start from the record, before recovery adds to it.
  auto event_counts = store_.event_counts();
  if (!event_counts) return tl::unexpected(event_counts.error());
  auto run_counts = store_.run_counts();
  if (!run_counts) return tl::unexpected(run_counts.error());
  metrics_.set_baseline(*event_counts, *run_counts);
  auto draining = store_.meta("draining");
  if (!draining) return tl::unexpected(draining.error());
  draining_ = *draining && **draining == "1";
  auto recorded = commit([&]() -> Status {
    if (auto st = store_.replace_resources(inventory_.resources); !st) return st;
    if (auto st = store_.set_meta("gpu_mode", inventory_.mode); !st) return st;
    return store_.set_meta("gpu_note", inventory_.note);
  });
  if (!recorded) return recorded;
  auto names = store_.footprint_names();
  if (!names) return tl::unexpected(names.error());
  footprint_names_.insert(names->begin(), names->end());
  if (auto recovered = recover(); !recovered) return recovered;
  if (auto usage = users_.load(store_, world_.now_ms()); !usage) return usage;
  auto started = commit([&] {
    return add_event("daemon.started", std::nullopt, std::nullopt,
                     {{"pid", ::getpid()}, {"gpu_mode", inventory_.mode},
                      {"gpus", inventory_.resources.size()}, {"note", inventory_.note},
                      {"adopted", runs_->live().size()}, {"active", active_.size()},
                      {"draining", draining_}, {"boot_id", options_.boot_id}});
  });
  if (!started) return started;
  if (auto watching = start_watching(); !watching) return watching;
  start_pruning();
  request_pass();
  return ok();
}

}  // namespace gpuq::daemon
