// SPDX-License-Identifier: Apache-2.0
// The probe's latest readings of each GPU slot — memory in use, utilisation, temperature, power
// draw — for /metrics (api/metrics.h). Kept apart from the pass's publication (Queue::waits()):
// the sensors change at every probe without changing what the scheduler decides, so they must
// neither wait for nor cost a pass. The Queue sets them after each probe on its actor thread;
// the API reads them from any thread (a mutex guards a small vector).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace gpuq::daemon {

// One GPU slot as the last probe saw it; -1 for what it does not know.
struct GpuReading {
  int64_t memory_used_mib = -1;
  int utilization = -1;    // percent
  int temperature_c = -1;  // degrees C
  double power_w = -1;     // watts
};

class GpuReadings {
 public:
  explicit GpuReadings(size_t slots) : readings_(slots) {}

  // Replaces the readings (one per inventory slot).
  void set(std::vector<GpuReading> readings) {
    std::lock_guard lock(mutex_);
    readings_ = std::move(readings);
  }
  // A copy of the readings, one per inventory slot; all unknown before the first probe.
  std::vector<GpuReading> get() const {
    std::lock_guard lock(mutex_);
    return readings_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<GpuReading> readings_;
};

}  // namespace gpuq::daemon
