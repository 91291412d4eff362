// SPDX-License-Identifier: Apache-2.0
// Which GPUs are held by a *foreign* process — one that no live run owns — from one GPU probe
// after another, and the events that say so: `resource.foreign` when it starts (naming pid,
// command, user and memory), the same again as a reminder every `repeat_ms` while it lasts, and
// `resource.freed` when it ends. A GPU whose used memory stays above the threshold for two
// probes in a row with no process listed and no run on it is foreign too (processes of another
// container are invisible to NVML's process list).
// Pure logic on explicit times (tests drive it with a fake clock); plain value; one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuq::daemon {

struct GpuUser {
  int pid = 0;
  std::string command;  // "" when the process is not visible from here
  std::string user;
  int64_t used_memory_mib = 0;
};

// What one probe saw on one GPU (a daemon slot).
struct ForeignObservation {
  int slot = 0;
  std::string gpu;                 // the resource name, for events
  std::vector<GpuUser> foreign;    // listed processes that no live run owns
  bool memory_without_process = false;  // memory above the threshold, none listed, no run on it
  int64_t memory_used_mib = 0;
};

struct ForeignEvent {
  std::string kind;  // "resource.foreign" (start and reminders) or "resource.freed"
  int slot = 0;
  nlohmann::json data;
};

class ForeignTracker {
 public:
  ForeignTracker(size_t slots, int64_t repeat_ms) : slots_(slots), repeat_ms_(repeat_ms) {}

  // Takes one probe's observations (GPUs missing from `seen` keep their state) and returns the
  // events to record, in slot order.
  std::vector<ForeignEvent> observe(const std::vector<ForeignObservation>& seen, int64_t now_ms);

  bool foreign(int slot) const { return slots_[slot].foreign; }
  // For status: {"since", "processes": [...], "memory_used_mib", "why"}; null when not foreign.
  nlohmann::json detail(int slot) const;

 private:
  struct Slot {
    bool foreign = false;
    int64_t since_ms = 0;
    int64_t reported_ms = 0;
    int memory_only_probes = 0;  // consecutive probes with memory but no process listed
    std::vector<GpuUser> users;
    int64_t memory_used_mib = 0;
    std::string why;
  };
  nlohmann::json event_data(const std::string& gpu, const Slot& slot, int64_t now_ms, bool reminder) const;

  std::vector<Slot> slots_;
  int64_t repeat_ms_;
};

// The JSON of one process for events and status.
nlohmann::json to_json(const GpuUser& user);

}  // namespace gpuq::daemon
