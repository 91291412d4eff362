// SPDX-License-Identifier: Apache-2.0
#include "daemon/prober.h"

namespace gpuq::daemon {

Prober::Prober(std::unique_ptr<gpu::GpuProbe> probe, int64_t interval_ms, Callback callback)
    : probe_(std::move(probe)), interval_ms_(interval_ms), callback_(std::move(callback)) {
  thread_ = std::thread([this] { loop(); });
}

Prober::~Prober() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Prober::loop() {
  while (true) {
    auto sample = probe_->sample();
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    callback_(std::move(sample));
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, std::chrono::milliseconds(interval_ms_), [this] { return stopping_; })) return;
  }
}

}  // namespace gpuq::daemon
