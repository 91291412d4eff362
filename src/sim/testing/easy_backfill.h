// SPDX-License-Identifier: Apache-2.0
// A test double for sched::schedule that really backfills (EASY: the first job that does not
// fit gets a reserved start — the "shadow" time when enough GPUs are expected free — and worse
// jobs may start if they end by then or use only GPUs it will not need; no cap: it never holds
// back, so simulate it with SimMachine::max_reservations huge). It exists to test the
// simulator's window (window.h, P1-P3) against a policy that starts jobs deep in the queue.
// gpuq's own backfill is EASY too (scheduler.h), but this is a separate, simpler copy, never
// used by simulate() itself: whole GPUs only, no lanes, memory, topology or reservations
// (reserved GPUs are left alone).
// Header-only; pure; thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "sched/scheduler.h"

namespace gpuq::sim::testing {

// A wait of this kind for a job of `needed` GPUs with `free` free.
inline sched::WaitReason waiting(sched::WaitReason::Kind kind, int needed, int free) {
  sched::WaitReason reason;
  reason.kind = kind;
  reason.needed = sched::narrow_to<int16_t>(needed);
  reason.free = sched::narrow_to<int16_t>(free);
  return reason;
}

inline sched::Decision easy_backfill(const sched::Snapshot& s) {
  constexpr int64_t kUnknown = std::numeric_limits<int64_t>::max();
  std::vector<sched::PendingJob> queue = s.queue;
  sched::sort_queue(queue, s.policy);
  std::vector<int> free;
  for (const sched::Gpu& g : s.gpus) {
    if (g.usable && !g.held_exclusive && g.sharers == 0 && g.reservation < 0)
      free.push_back(g.slot);
  }
  std::vector<std::pair<int64_t, int>> ends;  // (expected end, GPUs it frees)
  for (const sched::RunningJob& r : s.running) {
    ends.push_back(
        {r.expected_end_ms > 0 ? r.expected_end_ms : kUnknown, static_cast<int>(r.slots.size())});
  }
  sched::Decision d;
  size_t next_free = 0;
  bool blocked = false;
  int64_t shadow = 0;
  int extra = 0;
  auto start = [&](const sched::PendingJob& job) {
    sched::Start st{job.id, {}};
    for (int i = 0; i < job.gpus; ++i) st.slots.push_back(free[next_free++]);
    ends.push_back({job.estimate_ms > 0 ? s.now_ms + job.estimate_ms : kUnknown, job.gpus});
    d.starts.push_back(std::move(st));
  };
  for (const sched::PendingJob& job : queue) {
    int unclaimed = static_cast<int>(free.size() - next_free);
    bool fits = job.gpus <= unclaimed;
    if (!blocked && fits) {
      start(job);
      continue;
    }
    if (!blocked) {
      blocked = true;
      std::sort(ends.begin(), ends.end());
      int avail = unclaimed;
      shadow = s.now_ms;  // never enough known ends: nothing ends before the head's start
      for (const auto& [end, gpus] : ends) {
        if (avail >= job.gpus || end == kUnknown) break;
        avail += gpus;
        shadow = end;
      }
      extra = avail >= job.gpus ? avail - job.gpus : 0;
      if (avail < job.gpus) shadow = s.now_ms;
      d.latest_reserved_start_ms = shadow;  // lengths past it are alike here too (window.h P5)
      d.waits.push_back({job.id, waiting(sched::WaitReason::Kind::kNeedsGpus, job.gpus, unclaimed)});
      continue;
    }
    bool ends_in_time = job.estimate_ms > 0 && s.now_ms + job.estimate_ms <= shadow;
    if (s.policy == sched::Policy::kBackfill && fits && (ends_in_time || job.gpus <= extra)) {
      if (!ends_in_time) extra -= job.gpus;
      start(job);
      continue;
    }
    d.waits.push_back(
        {job.id, waiting(sched::WaitReason::Kind::kReservedForBetter, job.gpus, unclaimed)});
  }
  return d;
}

}  // namespace gpuq::sim::testing
