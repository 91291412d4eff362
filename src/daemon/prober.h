// SPDX-License-Identifier: Apache-2.0
// Runs the GPU probe (gpu/probe.h) on its own thread, once at start and then every interval,
// and hands each sample (or the probe's error) to a callback — the daemon posts it to the queue
// actor. A probe call may block for its whole timeout (nvidia-smi on a sick driver), which is
// why it never runs on the actor's thread. The Prober owns the probe and the thread; the
// destructor stops and joins promptly (it does not wait out the interval).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "gpu/probe.h"

namespace gpuq::daemon {

class Prober {
 public:
  using Callback = std::function<void(Result<gpu::ProbeSample>)>;
  Prober(std::unique_ptr<gpu::GpuProbe> probe, int64_t interval_ms, Callback callback);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

 private:
  void loop();

  std::unique_ptr<gpu::GpuProbe> probe_;
  int64_t interval_ms_;
  Callback callback_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuq::daemon
