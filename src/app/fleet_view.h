// SPDX-License-Identifier: Apache-2.0
// What the dashboard's Fleet page shows (GET /v1/fleet): the fleet's nodes with their
// heartbeats, and its jobs by queue, as `gpuq fleet status --json` would print them. Reading
// them costs requests to the bucket (lists, and a few GETs per job shown), so the API thread never
// waits for them: snapshot() answers at once with the latest reading, and a reader thread
// refreshes it every `refresh` — but only while somebody looked within the last few refreshes,
// so a daemon whose dashboard nobody opens reads nothing.
// Owns its own store (a handle is not shared with the agent's thread) and its reader thread.
// Thread rules: snapshot() from any thread; stop() (also run by the destructor) once.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "fleet/object_store.h"

namespace gpuq::app {

class FleetView {
 public:
  FleetView(std::unique_ptr<fleet::ObjectStore> store, std::string url, std::string node,
            std::chrono::milliseconds refresh);
  ~FleetView();
  FleetView(const FleetView&) = delete;
  FleetView& operator=(const FleetView&) = delete;

  // {"url", "node" (this one), "as_of_ms" (null before the first reading), "error" (the last
  // reading's failure, or null), "refresh_ms", "nodes", "jobs", "queues", "not_shown"} with
  // the last four as in `gpuq fleet status --json` (docs/fleet.md: the best 20 waiting jobs
  // are read, the rest counted). The first call starts the reading.
  nlohmann::json snapshot();
  void stop();

 private:
  void loop();
  void read_once();

  std::unique_ptr<fleet::ObjectStore> store_;
  const std::string url_;
  const std::string node_;
  const std::chrono::milliseconds refresh_;
  std::mutex mutex_;
  std::condition_variable wake_;
  nlohmann::json latest_;  // guarded by mutex_
  std::chrono::steady_clock::time_point last_asked_{};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuq::app
