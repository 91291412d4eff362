// SPDX-License-Identifier: Apache-2.0
// The agent tests' common ground: an in-memory bucket seen by several nodes, each a fake
// daemon and an agent stepped on a virtual clock, and jobs seeded as `gpuq fleet submit`
// seeds them. For the agent_*_test.cc files only.
#pragma once

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>

#include "fleet/agent.h"
#include "fleet/testing/fake_executor.h"
#include "fleet/testing/memory_store.h"
#include "os/process.h"

namespace gpuq::fleet::testing {


constexpr int64_t kLease = 60'000;
constexpr int64_t kMinFreeDisk = int64_t{10} << 30;  // the nodes' [fleet] min_free_disk

// Puts `job` in its queue as `gpuq fleet submit` does: its spec, its name, its entry, a new
// signal.
inline void publish(ObjectStore& store, const FleetJob& job) {
  EXPECT_TRUE(store.put(keys::spec(job.id), to_json(job).dump()));
  if (!job.name.empty()) {
    EXPECT_TRUE(store.create(keys::name(job.name), nlohmann::json{{"id", job.id}}.dump()));
  }
  EXPECT_TRUE(store.put(job.entry(), nlohmann::json{{"id", job.id}}.dump()));
  EXPECT_TRUE(store.put(std::string(keys::kSignal), random_token()));
}

inline FleetJob seed(ObjectStore& store, const std::string& klass, int gpus, int64_t submitted_ms,
              std::vector<FleetDep> after = {}, std::string name = "") {
  FleetJob job;
  job.id = new_job_id(submitted_ms);
  job.name = std::move(name);
  job.klass = klass;
  job.submitted_ms = submitted_ms;
  job.spec.gpus = gpus;
  job.spec.script_name = "train.sh";
  job.spec.script_text = "#!/bin/bash\necho hi\n";
  job.after = std::move(after);
  publish(store, job);
  return job;
}

// A class job that declares data.
inline FleetJob seed_with_data(ObjectStore& store, int gpus, std::vector<std::string> inputs,
                        std::vector<std::string> outputs = {}) {
  FleetJob job;
  job.id = new_job_id(9);
  job.klass = "any";
  job.submitted_ms = 9;
  job.spec.gpus = gpus;
  job.spec.script_text = "#!/bin/bash\n";
  job.spec.inputs = std::move(inputs);
  job.spec.outputs = std::move(outputs);
  publish(store, job);
  return job;
}

inline Claim claim_of(ObjectStore& store, const std::string& id) {
  auto object = store.get(keys::claim(id));
  EXPECT_TRUE(object) << id;
  if (!object) return {};
  auto claim = claim_from_json(nlohmann::json::parse(object->body));
  EXPECT_TRUE(claim);
  return claim ? *claim : Claim{};
}

// A store whose GETs of data take time: each one moves the test's clock 8 s on (and lets the
// test run other nodes meanwhile), as a large input would.
class SlowDataStore : public MemoryStore {
 public:
  using MemoryStore::MemoryStore;
  Result<Object> get(const std::string& key, const std::string& if_none_match = "") override {
    if (key.rfind("data/", 0) == 0 && on_data_get) on_data_get();
    return MemoryStore::get(key, if_none_match);
  }
  std::function<void()> on_data_get;
};

// Transfers that run when the test says: a pull or push stays in flight, as a large one does
// on a ThreadTransferQueue, while the agent steps on.
class ManualTransferQueue : public TransferQueue {
 public:
  explicit ManualTransferQueue(ObjectStore& data) : data_(data) {}
  void submit(Work work) override { works_.push_back(std::move(work)); }
  size_t waiting() const { return works_.size(); }
  void run_all() {
    auto works = std::move(works_);
    works_.clear();
    for (auto& work : works) work(data_);
  }

 private:
  ObjectStore& data_;
  std::vector<Work> works_;
};

// A node whose pulls and pushes wait for the test (ManualTransferQueue), with a workdir of its
// own (removed with it), stepped by the test with agent->step.
struct ManualTransfersNode {
  explicit ManualTransfersNode(std::shared_ptr<Bucket> bucket, int gpus = 1)
      : store(bucket), data(bucket), executor(gpus), transfers(data),
        dir(std::filesystem::temp_directory_path() / ("gpuq-agent-" + random_token())) {
    std::filesystem::create_directories(dir);
    AgentOptions options;
    options.node = "a";
    options.lease_ms = kLease;
    options.workdir = dir.string();
    agent = std::make_unique<Agent>(store, &data, executor, options, &transfers);
  }
  ~ManualTransfersNode() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  MemoryStore store;
  MemoryStore data;
  FakeExecutor executor;
  ManualTransferQueue transfers;
  std::filesystem::path dir;
  std::unique_ptr<Agent> agent;
};

// One node: its own view of the shared bucket, a fake daemon and an agent, on a clock the
// test moves.
struct Node {
  // `tune` changes the agent's options before it is made.
  Node(std::shared_ptr<Bucket> bucket, const std::string& name, int gpus, std::string state_file = "",
       std::string claim_deadline_dir = "",
       const std::function<void(AgentOptions&)>& tune = {})
      : store(bucket), data(bucket), executor(gpus) {
    AgentOptions options;
    options.claim_deadline_dir = std::move(claim_deadline_dir);
    options.node = name;
    options.lease_ms = kLease;
    options.workdir = workdir;
    options.min_free_disk_bytes = kMinFreeDisk;
    options.state_file = std::move(state_file);
    options.version = "test";
    options.base_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/node"}};
    options.mono_clock = [this] { return now; };
    if (tune) tune(options);
    agent = std::make_unique<Agent>(store, &data, executor, options);
  }
  // Steps the agent at every time it asks for until `until` (the node's own clock).
  void run_until(int64_t until) {
    while (next <= until) {
      now = next;
      next = agent->step(now, 1'700'000'000'000 + now);
      if (next <= now) next = now + 1;
    }
    now = until;
  }
  // The agent was nudged (a local job ended): it steps at once.
  void nudge() {
    agent->nudge();
    next = now;
  }
  void start() {
    ASSERT_TRUE(agent->start(now, 1'700'000'000'000 + now));
    next = now;
  }
  MemoryStore store;
  MemoryStore data;
  FakeExecutor executor;
  std::string workdir = "/nonexistent-workdir";
  std::unique_ptr<Agent> agent;
  int64_t now = 0;
  int64_t next = 0;
};

}  // namespace gpuq::fleet::testing
