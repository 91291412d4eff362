// SPDX-License-Identifier: Apache-2.0
#include "model/event.h"

#include "base/time.h"

namespace gpuq {

nlohmann::json event_to_json(const Event& event) {
  return {
      {"seq", event.seq},
      {"time", format_rfc3339(event.time_ms)},
      {"time_ms", event.time_ms},
      {"kind", event.kind},
      {"job", event.job ? nlohmann::json(*event.job) : nlohmann::json(nullptr)},
      {"run", event.run ? nlohmann::json(*event.run) : nlohmann::json(nullptr)},
      {"data", event.data},
  };
}

}  // namespace gpuq
