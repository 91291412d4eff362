// SPDX-License-Identifier: Apache-2.0
#include "app/fleet_view.h"

#include "base/time.h"
#include "cli/fleet_format.h"
#include "fleet/client.h"

namespace gpuq::app {
namespace {

// Readings go on while somebody looked within this many refreshes.
constexpr int kRefreshesAfterLastLook = 4;

}  // namespace

FleetView::FleetView(std::unique_ptr<fleet::ObjectStore> store, std::string url, std::string node,
                     std::chrono::milliseconds refresh)
    : store_(std::move(store)), url_(std::move(url)), node_(std::move(node)), refresh_(refresh) {
  latest_ = {{"url", url_},       {"node", node_},   {"as_of_ms", nullptr}, {"error", nullptr},
             {"refresh_ms", refresh_.count()}, {"nodes", nlohmann::json::array()},
             {"jobs", nlohmann::json::array()}, {"queues", nlohmann::json::array()},
             {"not_shown", 0}};
  thread_ = std::thread([this] { loop(); });
}

FleetView::~FleetView() { stop(); }

void FleetView::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

nlohmann::json FleetView::snapshot() {
  std::lock_guard lock(mutex_);
  bool idle = last_asked_ == std::chrono::steady_clock::time_point{} ||
              std::chrono::steady_clock::now() - last_asked_ > refresh_ * kRefreshesAfterLastLook;
  last_asked_ = std::chrono::steady_clock::now();
  if (idle) wake_.notify_all();  // the reader sleeps while nobody looks: a reading now
  return latest_;
}

void FleetView::loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto now = std::chrono::steady_clock::now();
    bool wanted = last_asked_ != std::chrono::steady_clock::time_point{} &&
                  now - last_asked_ <= refresh_ * kRefreshesAfterLastLook;
    if (!wanted) {
      wake_.wait(lock);
      continue;
    }
    lock.unlock();
    read_once();
    lock.lock();
    wake_.wait_for(lock, refresh_, [this] { return stopping_; });
  }
}

void FleetView::read_once() {
  auto status = fleet::status(*store_);
  std::lock_guard lock(mutex_);
  if (!status) {
    latest_["error"] = status.error().message;  // the last good reading stays, with its time
    return;
  }
  nlohmann::json reading = nlohmann::json::parse(cli::fleet_status_json(*status).dump());
  for (const char* key : {"nodes", "jobs", "queues", "not_shown"}) latest_[key] = std::move(reading[key]);
  latest_["error"] = nullptr;
  latest_["as_of_ms"] = wall_now_ms();
}

}  // namespace gpuq::app
