// SPDX-License-Identifier: Apache-2.0
#include "fleet/backoff.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/random.h"

namespace gpuq::fleet {

Backoff::Backoff(int64_t first_ms, int64_t max_ms)
    : ceiling_ms_(std::clamp<int64_t>(first_ms, 1, std::max<int64_t>(max_ms, 1))),
      max_ms_(std::max<int64_t>(max_ms, 1)),
      random_(random_seed()) {}

int64_t Backoff::next_ms() {
  const int64_t ceiling = ceiling_ms_;
  ceiling_ms_ = std::min(ceiling_ms_ * 2, max_ms_);
  std::uniform_int_distribution<int64_t> pick(ceiling / 2, ceiling);
  return pick(random_);
}

void Backoff::wait(int64_t at_most_ms) {
  const int64_t ms = std::min(next_ms(), std::max<int64_t>(at_most_ms, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace gpuq::fleet
