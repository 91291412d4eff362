// SPDX-License-Identifier: Apache-2.0
// WaitReason::text: the one place a reason becomes words. It reads only the machine parts of
// the snapshot (GPUs, lanes, reservations), never the queue or the running jobs, because the
// daemon renders reasons later from a snapshot whose queue it has dropped.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "sched/scheduler.h"

namespace gpuq::sched {
namespace {

std::string plural(int n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// "~40m", "~2h30m": people read an estimate, so it is rounded to what they would say.
std::string approx(int64_t ms) {
  if (ms < 1000) return "<1s";
  int64_t s = (ms + 500) / 1000;
  if (s < 60) return fmt::format("~{}s", s);
  int64_t m = (s + 30) / 60;
  if (m < 60) return fmt::format("~{}m", m);
  if (m < 24 * 60)
    return m % 60 == 0 ? fmt::format("~{}h", m / 60) : fmt::format("~{}h{:02}m", m / 60, m % 60);
  if (m < 48 * 60) return fmt::format("~{}h", (m + 30) / 60);
  return fmt::format("~{}d", (m + 12 * 60) / (24 * 60));
}

std::string lane_name(const Snapshot& snapshot, int lane) {
  if (lane == WaitReason::kGpuWork) return "GPU work";
  if (lane >= 0 && lane < static_cast<int>(snapshot.lanes.size())) {
    return "lane " + snapshot.lanes[lane].name;
  }
  return fmt::format("lane #{}", lane);
}

std::string reserved_slots(const Snapshot& snapshot, int reservation) {
  std::vector<int> slots;
  if (reservation >= 0 && reservation < static_cast<int>(snapshot.reservations.size())) {
    slots = snapshot.reservations[reservation].slots;
  }
  for (const Gpu& gpu : snapshot.gpus) {
    if (gpu.reservation == reservation) slots.push_back(gpu.slot);
  }
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return fmt::format("{}", fmt::join(slots, ","));
}

std::string lane_busy(const WaitReason& r, const Snapshot& snapshot) {
  if (r.lane < 0 || r.lane >= static_cast<int>(snapshot.lanes.size())) {
    return fmt::format("lane #{} does not exist", r.lane);
  }
  if (snapshot.lanes[r.lane].capacity < 1) {
    return fmt::format("{} has no capacity", lane_name(snapshot, r.lane));
  }
  std::string text = lane_name(snapshot, r.lane) + " busy";
  if (r.job != 0) text += fmt::format(" with job {}", r.job);
  if (r.next_free_in_ms >= 0) text += ", next free in " + approx(r.next_free_in_ms);
  return text;
}

}  // namespace

std::string WaitReason::text(const Snapshot& snapshot) const {
  switch (kind) {
    case Kind::kDraining:
      return "draining: the queue starts nothing new (gpuq undrain)";
    case Kind::kBehindBetterJobs: {
      std::string who = plural(better_jobs, "better job");
      if (needed > 0) return fmt::format("behind {} waiting for GPUs (needs {})", who, needed);
      if (lane >= 0)
        return fmt::format("behind {} that {} would delay", who, lane_name(snapshot, lane));
      return fmt::format("behind {} waiting", who);
    }
    case Kind::kReservedForBetter:
      if (next_free_in_ms < 0) return fmt::format("would delay job {}", job);
      return fmt::format("would delay job {}, which starts in {}", job, approx(next_free_in_ms));
    case Kind::kLaneBusy:
      return lane_busy(*this, snapshot);
    case Kind::kLaneExcluded: {
      if (job < 0) {
        return fmt::format("{} and {} exclude each other, and it needs both",
                           lane_name(snapshot, lane), lane_name(snapshot, other_lane));
      }
      std::string text = lane_name(snapshot, lane) + " excluded while ";
      if (job == 0) return text + lane_name(snapshot, other_lane) + " runs";
      return text + fmt::format("job {} ({}) runs", job, lane_name(snapshot, other_lane));
    }
    case Kind::kNoGpuMemory:
      if (free == 0) return fmt::format("no GPU has {} MiB free", gpu_mem_mib);
      return fmt::format("needs {} with {} MiB free, {} {} it", plural(needed, "GPU"), gpu_mem_mib,
                         free, free == 1 ? "has" : "have");
    case Kind::kReservation: {
      std::string slots = reserved_slots(snapshot, reservation);
      if (slots.empty()) return fmt::format("reservation #{} has no GPUs", reservation);
      return fmt::format("reserved GPUs {} busy", slots);
    }
    case Kind::kUserLimit:
      if (running_limit) return fmt::format("user limit: {} of {} running jobs", in_use, limit);
      return fmt::format("user limit: {} of {} GPUs in use", in_use, limit);
    case Kind::kNeedsGpus: {
      std::string text = fmt::format("needs {}, {} free", plural(needed, "GPU"), free);
      if (usable >= 0 && usable < needed) text += fmt::format(", only {} usable", usable);
      if (next_free_in_ms >= 0) text += ", next free in " + approx(next_free_in_ms);
      return text;
    }
  }
  return "";
}

}  // namespace gpuq::sched
