// SPDX-License-Identifier: Apache-2.0
#include "daemon/foreign_tracker.h"

#include <fmt/format.h>

#include "base/time.h"

namespace gpuq::daemon {

nlohmann::json to_json(const GpuUser& user) {
  return {{"pid", user.pid},
          {"command", user.command.empty() ? "(not visible from here)" : user.command},
          {"user", user.user},
          {"used_memory_mib", user.used_memory_mib}};
}

nlohmann::json ForeignTracker::event_data(const std::string& gpu, const Slot& slot, int64_t now_ms,
                                          bool reminder) const {
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& u : slot.users) processes.push_back(to_json(u));
  return {{"gpu", gpu},
          {"processes", processes},
          {"memory_used_mib", slot.memory_used_mib},
          {"why", slot.why},
          {"since", format_rfc3339(slot.since_ms)},
          {"for_ms", now_ms - slot.since_ms},
          {"reminder", reminder}};
}

std::vector<ForeignEvent> ForeignTracker::observe(const std::vector<ForeignObservation>& seen,
                                                  int64_t now_ms) {
  std::vector<ForeignEvent> events;
  for (const ForeignObservation& o : seen) {
    if (o.slot < 0 || o.slot >= static_cast<int>(slots_.size())) continue;
    Slot& s = slots_[o.slot];
    s.memory_only_probes = o.memory_without_process ? s.memory_only_probes + 1 : 0;
    bool by_process = !o.foreign.empty();
    bool by_memory = s.memory_only_probes >= 2;
    if (!by_process && !by_memory) {
      if (s.foreign) {
        events.push_back({"resource.freed", o.slot,
                          {{"gpu", o.gpu}, {"was", "foreign"}, {"for_ms", now_ms - s.since_ms}}});
      }
      int memory_only = s.memory_only_probes;
      s = Slot{};
      s.memory_only_probes = memory_only;
      continue;
    }
    s.users = o.foreign;
    s.memory_used_mib = o.memory_used_mib;
    s.why = by_process
                ? fmt::format("{} process{} that no gpuq run owns", o.foreign.size(),
                              o.foreign.size() == 1 ? "" : "es")
                : fmt::format("{} MiB used with no process listed and no run on it",
                              o.memory_used_mib);
    if (!s.foreign) {
      s.foreign = true;
      s.since_ms = now_ms;
      s.reported_ms = now_ms;
      events.push_back({"resource.foreign", o.slot, event_data(o.gpu, s, now_ms, false)});
    } else if (now_ms - s.reported_ms >= repeat_ms_) {
      s.reported_ms = now_ms;
      events.push_back({"resource.foreign", o.slot, event_data(o.gpu, s, now_ms, true)});
    }
  }
  return events;
}

nlohmann::json ForeignTracker::detail(int slot) const {
  const Slot& s = slots_[slot];
  if (!s.foreign) return nullptr;
  nlohmann::json processes = nlohmann::json::array();
  for (const auto& u : s.users) processes.push_back(to_json(u));
  return {{"since", format_rfc3339(s.since_ms)},
          {"processes", processes},
          {"memory_used_mib", s.memory_used_mib},
          {"why", s.why}};
}

}  // namespace gpuq::daemon
