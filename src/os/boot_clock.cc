// SPDX-License-Identifier: Apache-2.0
#include "os/boot_clock.h"

#include <ctime>

namespace gpuq::os {

int64_t boot_clock_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace gpuq::os
