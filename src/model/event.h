// SPDX-License-Identifier: Apache-2.0
// An event: one entry of the daemon's append-only log. Every state change and every lasting
// condition is recorded as one, in the same transaction as the change. Plain value.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gpuq {

struct Event {
  int64_t seq = 0;                  // assigned by the store, strictly increasing
  int64_t time_ms = 0;              // wall clock, ms since the epoch
  std::string kind;                 // "job.started", ...
  std::optional<int64_t> job;       // the job it is about
  std::optional<int> run;           // the run number it is about
  nlohmann::json data = nlohmann::json::object();
};

// {"seq","time","time_ms","kind","job","run","data"} as in docs/api.md.
nlohmann::json event_to_json(const Event& event);

}  // namespace gpuq
