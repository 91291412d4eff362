// SPDX-License-Identifier: Apache-2.0
// The other nodes, seen through their heartbeats: one listing of nodes/ every node_watch_ms.
// A heartbeat whose ETag has not changed for three of that node's heartbeat intervals (read
// from its heartbeat when first seen), on this node's monotonic clock, makes the node stale
// (node.stale); a change brings it back (node.back).
#include <fmt/format.h>
#include <cstdio>
#include <thread>

#include "fleet/agent.h"
#include "os/boot_clock.h"

namespace gpuq::fleet {

void Agent::watch_nodes(int64_t mono) {
  auto listing = store_.list(std::string(keys::kNodes));
  if (!listing) return;
  for (const auto& info : listing->objects) {
    std::string_view key = info.key;
    constexpr std::string_view kSuffix = "/heartbeat.json";
    if (key.size() <= keys::kNodes.size() + kSuffix.size() || !key.ends_with(kSuffix)) continue;
    std::string node(key.substr(keys::kNodes.size(), key.size() - keys::kNodes.size() - kSuffix.size()));
    if (node == options_.node || node.find('/') != std::string::npos) continue;
    auto [it, first] = nodes_.try_emplace(node, NodeSeen{info.etag, mono, options_.heartbeat_ms, false});
    NodeSeen& seen = it->second;
    if (first) {
      // Its own interval, read once: a node is judged by the heartbeat it promised.
      auto object = store_.get(info.key);
      auto doc = object ? parse_object(info.key, object->body) : Result<nlohmann::json>(tl::unexpected(object.error()));
      auto beat = doc ? heartbeat_from_json(*doc) : Result<Heartbeat>(tl::unexpected(doc.error()));
      if (beat && beat->interval_ms > 0) seen.interval_ms = beat->interval_ms;
      continue;
    }
    if (seen.etag != info.etag) {
      seen.etag = info.etag;
      seen.since_mono = mono;
      if (seen.stale) {
        seen.stale = false;
        executor_.event("node.back", std::nullopt, {{"node", node}});
      }
      continue;
    }
    int64_t unchanged = mono - seen.since_mono;
    if (!seen.stale && unchanged >= 3 * seen.interval_ms) {
      seen.stale = true;
      executor_.event("node.stale", std::nullopt,
                      {{"node", node}, {"unchanged_s", unchanged / 1000},
                       {"why", fmt::format("its heartbeat has not changed for {} s", unchanged / 1000)}});
    }
  }
}

void AgentThread::start() {
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void AgentThread::request_stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
}

void AgentThread::stop() {
  request_stop();
  if (thread_.joinable()) thread_.join();
}

void AgentThread::nudge() {
  {
    std::lock_guard lock(mutex_);
    nudged_ = true;
  }
  wake_.notify_all();
}

void AgentThread::loop() {
  using namespace std::chrono;
  // The boot clock: the runs' shims read their claim deadlines in it (ClaimDeadlineFiles).
  auto mono = [] { return os::boot_clock_ms(); };
  auto wall = [] { return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count(); };
  agent_.use_clock(mono);
  if (auto started = agent_.start(mono(), wall()); !started) {
    std::fprintf(stderr, "gpuq daemon: the fleet agent stopped: %s\n", started.error().message.c_str());
    agent_.report_stopped(started.error().message);
    return;
  }
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    if (nudged_) agent_.nudge();
    nudged_ = false;
    lock.unlock();
    int64_t next = agent_.step(mono(), wall());
    lock.lock();
    int64_t wait = std::max<int64_t>(next - mono(), 0);
    wake_.wait_for(lock, milliseconds(wait), [this] { return stopping_ || nudged_; });
  }
}

}  // namespace gpuq::fleet
