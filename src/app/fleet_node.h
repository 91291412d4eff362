// SPDX-License-Identifier: Apache-2.0
// `gpuq daemon --fleet`: joins the fleet of a bucket (docs/fleet.md). Opens the fleet's store
// (and the data store), refuses a store that ignores conditional writes, and runs the fleet
// agent on its own thread over the queue actor (FleetExecutor). Nothing here when no fleet is
// named.
// Thread rules: made, started and stopped on the daemon's main thread; stop() before the actor
// stops answering.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "app/fleet_executor.h"
#include "app/fleet_view.h"
#include "base/paths.h"
#include "cli/cli.h"
#include "config/config.h"
#include "fleet/agent.h"
#include "fleet/transfer_queue.h"

namespace gpuq::app {

class FleetNode {
 public:
  // Null when no fleet is named (no --fleet, $GPUQ_FLEET or [fleet] url); an error, naming
  // the fix, when one is named but cannot be joined.
  static Result<std::unique_ptr<FleetNode>> join(const cli::DaemonFlags& flags, const config::FleetConfig& configured,
                                                 const HomeLayout& layout, boost::asio::io_context& actor,
                                                 daemon::Queue& queue, const std::string& version);
  ~FleetNode();
  // Starts the agent's thread (the agent's own start, which needs the actor, runs there).
  void start();
  // From the actor's thread, as the daemon stops: the agent stops waiting for the actor and
  // ends its loop soon. Does not wait.
  void close();
  // Waits for the agent's thread to end (after the actor stopped).
  void stop();
  std::string describe() const;
  // What GET /v1/fleet answers (FleetView::snapshot); thread-safe.
  nlohmann::json view() const { return view_->snapshot(); }

 private:
  FleetNode() = default;
  // From a transfer worker: a pull or push ended, the agent should look.
  void nudge_agent();
  // Transfer workers per node: a pull for a job about to start need not wait behind a long push.
  static constexpr int kTransferWorkers = 2;
  std::string url_;
  std::string node_;
  std::unique_ptr<fleet::ObjectStore> store_;
  std::unique_ptr<fleet::ObjectStore> data_store_;
  std::unique_ptr<FleetExecutor> executor_;
  std::unique_ptr<fleet::Agent> agent_;
  std::shared_ptr<std::atomic<bool>> abort_transfers_ = std::make_shared<std::atomic<bool>>(false);
  std::unique_ptr<fleet::ThreadTransferQueue> transfers_;
  std::mutex thread_mutex_;  // thread_ is made on the main thread and nudged from workers
  std::unique_ptr<fleet::AgentThread> thread_;
  std::unique_ptr<FleetView> view_;  // its own store: a handle is not shared between threads
};

}  // namespace gpuq::app
