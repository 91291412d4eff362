// SPDX-License-Identifier: Apache-2.0
// The local daemon as the fleet agent sees it (fleet/executor.h): each call is posted to the
// queue actor's io_context and waited for, so the agent (on its own thread) acts through the
// one writer like any API request. Once the actor stops (close()), calls fail at once instead
// of waiting for an actor that will never answer.
// Thread rules: the agent's thread calls the Executor methods; close() may come from any thread.
#pragma once

#include <atomic>
#include <string>

#include "base/asio.h"
#include "daemon/queue.h"
#include "fleet/executor.h"

namespace gpuq::app {

class FleetExecutor : public fleet::Executor {
 public:
  // `workdir`: the [fleet] workdir, whose free space machine() reports.
  FleetExecutor(boost::asio::io_context& actor, daemon::Queue& queue, std::string workdir)
      : actor_(actor), queue_(queue), workdir_(std::move(workdir)) {}

  Result<int64_t> submit(JobSpec spec) override;
  Result<fleet::LocalJob> job(int64_t id) override;
  Status cancel(int64_t id) override;
  Result<fleet::LocalMachine> machine() override;
  Status reserve_gpu(const std::string& reservation, int index) override;
  void event(const std::string& kind, std::optional<int64_t> job, nlohmann::json data) override;

  void close() { closed_ = true; }

 private:
  // Runs `fn` on the actor's thread and returns its result; kUnavailable once closed.
  template <class T>
  Result<T> on_actor(std::function<Result<T>()> fn);

  boost::asio::io_context& actor_;
  daemon::Queue& queue_;
  const std::string workdir_;
  std::atomic<bool> closed_{false};
};

}  // namespace gpuq::app
