// The fleet agent on virtual clocks over an in-memory bucket, with fake daemons: claims,
// leases, reclaims, cut-off holders, cancels, dependencies, data, restarts and what an idle
// node costs. The same agent against a real S3 API server and real daemons: tests/fleet.
#include "fleet/agent.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>

#include "fleet/testing/fake_executor.h"
#include "fleet/testing/memory_store.h"
#include "os/process.h"

namespace gpuq::fleet {
namespace {

using testing::Bucket;
using testing::FakeExecutor;
using testing::MemoryStore;

constexpr int64_t kLease = 60'000;

// Puts `job` in its queue as `gpuq fleet submit` does: its spec, its name, its entry, a new
// signal.
void publish(ObjectStore& store, const FleetJob& job) {
  EXPECT_TRUE(store.put(keys::spec(job.id), to_json(job).dump()));
  if (!job.name.empty()) {
    EXPECT_TRUE(store.create(keys::name(job.name), nlohmann::json{{"id", job.id}}.dump()));
  }
  EXPECT_TRUE(store.put(job.entry(), nlohmann::json{{"id", job.id}}.dump()));
  EXPECT_TRUE(store.put(std::string(keys::kSignal), random_token()));
}

FleetJob seed(ObjectStore& store, const std::string& klass, int gpus, int64_t submitted_ms,
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
FleetJob seed_with_data(ObjectStore& store, int gpus, std::vector<std::string> inputs,
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

Claim claim_of(ObjectStore& store, const std::string& id) {
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

// One node: its own view of the shared bucket, a fake daemon and an agent, on a clock the
// test moves.
struct Node {
  Node(std::shared_ptr<Bucket> bucket, const std::string& name, int gpus, std::string state_file = "")
      : store(bucket), data(bucket), executor(gpus) {
    AgentOptions options;
    options.node = name;
    options.lease_ms = kLease;
    options.workdir = workdir;
    options.state_file = std::move(state_file);
    options.version = "test";
    options.base_env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/home/node"}};
    options.mono_clock = [this] { return now; };
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

TEST(FleetAgent, ClaimsAClassJobRunsItLocallyAndPublishesItsEnd) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 2);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(2'000);
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.node, "a");
  EXPECT_EQ(claim.attempt, 1);
  EXPECT_EQ(claim.state, "running");
  ASSERT_EQ(a.executor.specs.size(), 1u);
  const JobSpec& local = a.executor.specs.begin()->second;
  EXPECT_EQ(local.fleet_id, job.id);
  EXPECT_EQ(local.cwd, a.workdir);
  EXPECT_EQ(local.env.at("GPUQ_FLEET_ID"), job.id);
  EXPECT_EQ(local.env.at("GPUQ_FLEET_ATTEMPT"), "1");
  EXPECT_EQ(local.env.at("PATH"), "/usr/bin:/bin") << "the node's variables";
  EXPECT_EQ(local.env.size(), 5u) << "the node's PATH and HOME and the three fleet variables: nothing else";
  EXPECT_EQ(claim.local_id, a.executor.jobs.begin()->first) << "the renewal after the start records the local id";
  EXPECT_EQ(a.executor.count("job.claimed"), 1);

  a.executor.end(claim.local_id, 0);
  a.nudge();
  a.run_until(2'001);
  claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "succeeded");
  EXPECT_EQ(claim.exit_code, 0);
  EXPECT_FALSE(a.store.get(job.entry())) << "the entry is removed at the end";
  auto ended = a.store.list(std::string(keys::kEnded));
  ASSERT_TRUE(ended);
  ASSERT_EQ(ended->objects.size(), 1u);
  EXPECT_EQ(parse_ended_key(ended->objects[0].key)->second, job.id);
  EXPECT_TRUE(a.agent->held().empty());
}

TEST(FleetAgent, TwoNodesNeverBothTakeAJob) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1), b(bucket, "b", 1);
  a.start();
  b.start();
  FleetJob first = seed(a.store, "any", 1, 5);
  FleetJob second = seed(a.store, "any", 1, 6);
  a.run_until(2'000);
  b.run_until(2'000);
  EXPECT_EQ(claim_of(a.store, first.id).node, "a") << "the best (oldest) job goes to the first node with room";
  EXPECT_EQ(claim_of(a.store, second.id).node, "b");
  EXPECT_EQ(a.executor.jobs.size(), 1u);
  EXPECT_EQ(b.executor.jobs.size(), 1u);
}

TEST(FleetAgent, ALeaseThatStopsBeingRenewedIsTakenOverAndTheOldHolderStops) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1), b(bucket, "b", 1);
  a.start();
  b.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(0);  // a claims it at once (and renews it, recording its local id)
  ASSERT_EQ(claim_of(a.store, job.id).node, "a");
  b.run_until(0);  // b sees a's claim and starts watching it
  // a freezes (a node cut off or stopped): b must see the claim unchanged for a whole lease.
  b.run_until(kLease - 1);
  EXPECT_EQ(claim_of(a.store, job.id).node, "a") << "not before a whole lease on b's clock";
  b.run_until(1'000 + kLease + kLease / 3 + 1'000);
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.node, "b");
  EXPECT_EQ(claim.attempt, 2);
  ASSERT_EQ(b.executor.count("job.reclaimed"), 1);
  EXPECT_EQ(b.executor.events.back().data["from"], "a");
  // a wakes up: its lease is long gone, so it stops its run and publishes nothing (while b
  // goes on renewing: a claim that nobody renews for a lease may be taken by any node).
  a.executor.end(a.executor.jobs.begin()->first, 0);
  a.next = b.now;  // its first step after the freeze
  for (int64_t t = b.now; t <= 1'000 + 3 * kLease; t += 1'000) {
    b.run_until(t);
    a.run_until(t);
  }
  EXPECT_EQ(a.executor.count("job.claim_lost"), 1);
  claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.node, "b");
  EXPECT_EQ(claim.state, "running") << "a's end was not published";
}

TEST(FleetAgent, AHolderCutOffFromTheBucketStopsItsRunBeforeAnyoneCanCountItExpired) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1), b(bucket, "b", 1);
  a.start();
  b.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  b.run_until(1'000);
  a.store.set_cut_off(true);
  a.data.set_cut_off(true);
  a.run_until(1'000 + kLease / 3 + 2'000);
  ASSERT_EQ(a.executor.count("job.claim_lost"), 1);
  EXPECT_EQ(a.executor.cancelled.size(), 1u) << "its local run is stopped";
  EXPECT_EQ(claim_of(b.store, job.id).node, "a") << "b cannot have taken it yet";
  b.run_until(1'000 + 2 * kLease);
  EXPECT_EQ(claim_of(b.store, job.id).node, "b");
}

TEST(FleetAgent, ANodeThatLostItsOwnLeaseTakesTheJobAgainWhenNoOtherNodeDoes) {
  // The only node that serves the job's queue is cut off for longer than lease/3: it stops its
  // run. Back in touch, nobody else will ever take the job over, so it must, once the claim it
  // stopped renewing has stood unchanged for a whole lease, as any watcher would.
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  ASSERT_EQ(claim_of(a.store, job.id).node, "a");
  a.store.set_cut_off(true);
  a.run_until(1'000 + kLease / 3 + 2'000);
  ASSERT_EQ(a.executor.count("job.claim_lost"), 1);
  a.store.set_cut_off(false);
  a.run_until(1'000 + 3 * kLease);
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.node, "a");
  EXPECT_EQ(claim.attempt, 2) << "the job was left claimed by a run that no longer exists";
  EXPECT_EQ(claim.state, "running");
  EXPECT_EQ(a.executor.count("job.reclaimed"), 1);
  EXPECT_EQ(a.executor.jobs.size(), 2u);
}

// A bucket that calls `before(OPERATION, KEY)` ahead of every request: a slow link (a clock
// that moves with each call), or another node acting in between.
class HookedStore : public ObjectStore {
 public:
  using Hook = std::function<void(std::string_view operation, const std::string& key)>;
  HookedStore(ObjectStore& inner, Hook before)
      : inner_(inner), before_(std::move(before)) {}
  std::string describe() const override { return inner_.describe(); }
  Result<Object> get(const std::string& key, const std::string& if_none_match = "") override {
    before_("get", key);
    return inner_.get(key, if_none_match);
  }
  Result<std::string> put(const std::string& key, std::string_view body) override {
    before_("put", key);
    return inner_.put(key, body);
  }
  Result<std::string> create(const std::string& key, std::string_view body) override {
    before_("create", key);
    return inner_.create(key, body);
  }
  Result<std::string> replace(const std::string& key, std::string_view body, const std::string& etag) override {
    before_("replace", key);
    return inner_.replace(key, body, etag);
  }
  Status remove(const std::string& key) override {
    before_("remove", key);
    return inner_.remove(key);
  }
  Result<Listing> list(const std::string& prefix) override {
    before_("list", prefix);
    return inner_.list(prefix);
  }

 private:
  ObjectStore& inner_;
  Hook before_;
};

TEST(FleetAgent, ANodeThatLosesTheRaceToClaimAJobWatchesTheWinnersClaim) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  MemoryStore inner(bucket);
  // Between b's read of the job's (missing) claim and b's create of it, a claims the job.
  HookedStore store(inner, [&a](std::string_view operation, const std::string& key) {
    if (operation == "create" && key.ends_with("/claim.json") && a.executor.jobs.empty()) a.run_until(a.now);
  });
  FakeExecutor executor(1);
  AgentOptions options;
  options.node = "b";
  options.lease_ms = kLease;
  options.workdir = "/nonexistent-workdir";
  Agent b(store, &store, executor, options);
  constexpr int64_t kWall = 1'700'000'000'000;
  a.start();
  ASSERT_TRUE(b.start(0, kWall));
  FleetJob job = seed(inner, "any", 1, 5);
  b.step(0, kWall);
  ASSERT_EQ(claim_of(inner, job.id).node, "a");
  ASSERT_TRUE(executor.jobs.empty()) << "b's create lost";
  // a dies now. Nothing changes the bucket's signal, so no scan of b will find a's claim again.
  for (int64_t t = 1; t <= 2 * kLease + 10'000;) t = std::max(t + 1, b.step(t, kWall + t));
  Claim claim = claim_of(inner, job.id);
  EXPECT_EQ(claim.node, "b") << "the claim of the node that won the race was never watched";
  EXPECT_EQ(claim.attempt, 2);
  EXPECT_EQ(executor.count("job.reclaimed"), 1);
}

TEST(FleetAgent, ALongScanDoesNotStarveTheRenewalOfHeldClaims) {
  auto bucket = std::make_shared<Bucket>();
  MemoryStore inner(bucket), elsewhere(bucket);
  int64_t now = 0;
  HookedStore store(inner, [&now](std::string_view, const std::string&) { now += 50; });  // 50 ms a request
  FakeExecutor executor(1);
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.workdir = "/nonexistent-workdir";
  Agent agent(store, &store, executor, options);
  agent.use_clock([&now] { return now; });
  auto run_until = [&](int64_t until) {
    while (now <= until) {
      int64_t next = agent.step(now, 1'700'000'000'000 + now);
      now = std::max(now + 1, next);
    }
  };
  ASSERT_TRUE(agent.start(now, 1'700'000'000'000 + now));
  FleetJob job = seed(elsewhere, "any", 1, 5);
  run_until(1'000);
  ASSERT_EQ(claim_of(elsewhere, job.id).node, "a");
  // 400 jobs wait for more GPUs than the node has: a scan reads each one's claim and spec,
  // 800 requests of 50 ms, twice the time after which a holder counts its lease lost.
  // And one that fits, behind them: claimed at the end of the scan, its lease runs from then.
  for (int i = 0; i < 400; ++i) seed(elsewhere, "any", 4, 10 + i);
  FleetJob last = seed(elsewhere, "any", 0, 500);
  run_until(now + 2 * kLease);
  EXPECT_EQ(executor.count("job.claim_lost"), 0) << "a held claim was not renewed during the scan";
  EXPECT_TRUE(executor.cancelled.empty());
  for (const FleetJob& held : {job, last}) {
    Claim claim = claim_of(elsewhere, held.id);
    EXPECT_EQ(claim.node, "a");
    EXPECT_EQ(claim.attempt, 1);
    EXPECT_EQ(claim.state, "running");
  }
}

TEST(FleetAgent, TransientErrorsDoNotStopAHealthyRun) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  for (int64_t t = 1'000; t < 5 * kLease; t += kLease / 6) {
    a.store.fail_next(1);  // the next call fails, the retry works
    a.run_until(t);
  }
  EXPECT_EQ(a.executor.count("job.claim_lost"), 0);
  EXPECT_TRUE(a.executor.cancelled.empty());
  EXPECT_EQ(claim_of(a.store, job.id).node, "a");
}

TEST(FleetAgent, ACancelFromAnotherMachineStopsTheRunAndEndsTheJobCancelled) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  MemoryStore elsewhere(bucket);
  ASSERT_TRUE(elsewhere.put(keys::cancel(job.id), ""));
  ASSERT_TRUE(elsewhere.put(std::string(keys::kSignal), random_token()));
  a.run_until(3'500);  // one poll
  ASSERT_EQ(a.executor.cancelled.size(), 1u);
  a.run_until(6'000);
  EXPECT_EQ(claim_of(a.store, job.id).state, "cancelled");
}

TEST(FleetAgent, DependenciesWaitForTheirJobAndOneThatCanNeverBeMetEndsTheDependent) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 2);
  a.start();
  FleetJob train = seed(a.store, "any", 1, 5, {}, "train");
  FleetJob eval = seed(a.store, "any", 1, 6, {{Dependency::Kind::kAfterOk, "train"}});
  FleetJob cleanup = seed(a.store, "any", 0, 7, {{Dependency::Kind::kAfterNotOk, train.id}});
  a.run_until(1'000);
  EXPECT_EQ(a.executor.jobs.size(), 1u) << "only train may start";
  a.executor.end(claim_of(a.store, train.id).local_id, 0);
  a.nudge();
  a.run_until(3'000);
  EXPECT_EQ(claim_of(a.store, eval.id).node, "a") << "eval starts once train succeeded";
  Claim never = claim_of(a.store, cleanup.id);
  EXPECT_EQ(never.state, "cancelled");
  EXPECT_NE(never.reason.find("can never start"), std::string::npos) << never.reason;
}

TEST(FleetAgent, InputsArePulledBeforeTheStartAndOutputsPushedAtTheEnd) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-agent-" + random_token());
  std::filesystem::create_directories(dir);
  a.workdir = dir.string();
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.workdir = a.workdir;
  options.mono_clock = [&a] { return a.now; };
  a.agent = std::make_unique<Agent>(a.store, &a.data, a.executor, options);
  a.start();
  ASSERT_TRUE(a.data.put("data/in/train.json", "[1,2,3]"));
  FleetJob job = seed_with_data(a.store, 1, {"in/train.json"}, {"out/eval_*.json", "out/never.txt"});
  a.run_until(1'000);
  ASSERT_EQ(a.executor.jobs.size(), 1u);
  EXPECT_EQ(os::read_file((dir / "in/train.json").string()).value_or(""), "[1,2,3]");
  std::filesystem::create_directories(dir / "out");
  std::ofstream(dir / "out/eval_1.json") << "{\"score\": 1}";
  std::ofstream(dir / "out/eval_2.json") << "{\"score\": 2}";
  std::ofstream(dir / "out/other.json") << "not declared";
  a.executor.end(a.executor.jobs.begin()->first, 0);
  a.nudge();
  a.run_until(1'001);
  EXPECT_EQ(a.data.get("data/out/eval_1.json")->body, "{\"score\": 1}");
  EXPECT_EQ(a.data.get("data/out/eval_2.json")->body, "{\"score\": 2}");
  EXPECT_FALSE(a.data.get("data/out/other.json"));
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "succeeded");
  EXPECT_NE(claim.reason.find("output out/never.txt matched nothing"), std::string::npos) << claim.reason;
  std::filesystem::remove_all(dir);
}

TEST(FleetAgent, AJobWhoseInputIsMissingOrThatDeclaresDataWithoutADataStoreFailsBeforeItStarts) {
  auto bucket = std::make_shared<Bucket>();
  MemoryStore store(bucket);
  FakeExecutor executor(1);
  AgentOptions options;
  options.node = "a";
  options.workdir = "/tmp";
  options.data_problem = "AWS_ACCESS_KEY_ID is not set";
  Agent agent(store, nullptr, executor, options);
  ASSERT_TRUE(agent.start(0, 0));
  FleetJob job = seed_with_data(store, 0, {"in/x.json"});
  agent.step(1, 1);
  EXPECT_TRUE(executor.jobs.empty()) << "never handed to the daemon";
  Claim claim = claim_of(store, job.id);
  EXPECT_EQ(claim.state, "failed");
  EXPECT_NE(claim.reason.find("AWS_ACCESS_KEY_ID is not set"), std::string::npos) << claim.reason;
}

TEST(FleetAgent, AnInputThatTakesLongerThanALeaseToPullKeepsTheClaimRenewed) {
  auto bucket = std::make_shared<Bucket>();
  MemoryStore store(bucket);
  FakeExecutor executor(1);
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-agent-" + random_token());
  std::filesystem::create_directories(dir);
  int64_t clock = 0;
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.workdir = dir.string();
  // Each object takes 8 s to come: 20 of them take almost three leases.
  options.mono_clock = [&clock] { return clock; };
  SlowDataStore data(bucket);
  data.on_data_get = [&clock] { clock += 8'000; };
  Agent agent(store, &data, executor, options);
  ASSERT_TRUE(agent.start(0, 0));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(store.put(fmt::format("data/shards/{:02d}", i), "x"));
  FleetJob job = seed_with_data(store, 0, {"shards"});
  agent.step(0, 0);
  ASSERT_EQ(executor.jobs.size(), 1u) << "handed to the daemon once every shard was there";
  EXPECT_TRUE(std::filesystem::exists(dir / "shards/19"));
  Claim claim = claim_of(store, job.id);
  EXPECT_EQ(claim.state, "running");
  // 168 s of pulling at one renewal per lease/6 due (checked between shards, 8 s apart).
  EXPECT_GE(claim.renewal, 10) << "renewed while the shards came";
  EXPECT_EQ(executor.count("job.claim_lost"), 0);
  // No false loss after the pull either: the last renewal is dated when it was sent.
  agent.step(clock, clock);
  agent.step(clock + 2'000, clock + 2'000);
  EXPECT_EQ(executor.count("job.claim_lost"), 0);
  EXPECT_TRUE(executor.cancelled.empty());
  std::filesystem::remove_all(dir);
}

TEST(FleetAgent, ARestartedDaemonKeepsItsClaims) {
  auto bucket = std::make_shared<Bucket>();
  std::string state = (std::filesystem::temp_directory_path() / ("gpuq-agent-state-" + random_token())).string();
  Node a(bucket, "a", 1, state);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  ASSERT_EQ(a.agent->held().size(), 1u);
  // The daemon restarts: a new agent with the same state file and the same local jobs.
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.state_file = state;
  options.mono_clock = [] { return int64_t{5'000}; };
  Agent again(a.store, &a.data, a.executor, options);
  ASSERT_TRUE(again.start(5'000, 5'000));
  EXPECT_EQ(again.held(), std::vector<std::string>{job.id});
  EXPECT_EQ(a.executor.count("job.claim_lost"), 0);
  EXPECT_EQ(claim_of(a.store, job.id).node, "a");
  std::filesystem::remove(state);
}

TEST(FleetAgent, ANodeIsStaleAfterThreeOfItsOwnHeartbeatIntervalsAndBackWhenItBeats) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.node_watch_ms = 10'000;
  options.mono_clock = [&a] { return a.now; };
  a.agent = std::make_unique<Agent>(a.store, &a.data, a.executor, options);
  a.start();
  // b promised a heartbeat every 2 minutes (a beats every 30 s), then stopped.
  Heartbeat beat;
  beat.node = "b";
  beat.time_ms = 1;
  beat.interval_ms = 120'000;
  ASSERT_TRUE(a.store.put(keys::heartbeat("b"), to_json(beat).dump()));
  a.run_until(350'000);
  EXPECT_EQ(a.executor.count("node.stale"), 0) << "not before 3 of b's own intervals";
  a.run_until(380'000);
  ASSERT_EQ(a.executor.count("node.stale"), 1);
  EXPECT_EQ(a.executor.events.back().data["node"], "b");
  beat.time_ms = 2;
  ASSERT_TRUE(a.store.put(keys::heartbeat("b"), to_json(beat).dump()));
  a.run_until(400'000);
  EXPECT_EQ(a.executor.count("node.back"), 1);
  EXPECT_EQ(a.executor.count("node.stale"), 1);
}

TEST(FleetAgent, AnIdleNodePollsOneSmallObjectAndListsRarely) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  ASSERT_TRUE(a.store.put(std::string(keys::kSignal), "x"));
  a.start();
  a.run_until(60'000);  // the first scan, then quiet
  a.store.reset_counts();
  constexpr int64_t kHour = 3'600'000;
  a.run_until(60'000 + kHour);
  const auto& counts = a.store.counts();
  // Per hour: a heartbeat every 30 s; the signal every 2.5 s (quiet); nodes/ every 5 minutes.
  EXPECT_EQ(counts.put, kHour / 30'000);
  EXPECT_EQ(counts.get, kHour / 2'500);
  EXPECT_EQ(counts.not_modified, counts.get) << "every poll is a conditional GET answered 304";
  EXPECT_EQ(counts.list, kHour / 300'000);
  // At S3 Standard's prices ($0.005 per 1,000 PUT or LIST, $0.0004 per 1,000 GET), 30 days:
  double month = 30.0 * 24;
  double dollars = month * ((counts.put + counts.list) * 0.005 + counts.get * 0.0004) / 1000;
  EXPECT_LT(dollars, 1.0) << dollars;
}


// A store whose replaces fail (transiently) while fail_replaces > 0.
class FlakyReplaceStore : public MemoryStore {
 public:
  using MemoryStore::MemoryStore;
  int fail_replaces = 0;
  Result<std::string> replace(const std::string& key, std::string_view body, const std::string& etag) override {
    if (fail_replaces > 0) {
      --fail_replaces;
      return fail(Code::kUnavailable, "flaky replace");
    }
    return MemoryStore::replace(key, body, etag);
  }
};

// An `after` target is a name first, even one of the form of an id.
TEST(FleetAgent, ADependencyOnANameThatLooksLikeAnIdIsMet) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 2);
  a.start();
  FleetJob first = seed(a.store, "any", 1, 5, {}, "trainingrun01");
  FleetJob second = seed(a.store, "any", 1, 6, {{Dependency::Kind::kAfterOk, "trainingrun01"}});
  a.run_until(1'000);
  a.executor.end(claim_of(a.store, first.id).local_id, 0);
  a.nudge();
  a.run_until(10'000);
  EXPECT_TRUE(a.store.get(keys::claim(second.id))) << "the dependent never starts nor ends";
}

// A node's own claim, lost in a bucket outage, is taken again once the bucket is back.
TEST(FleetAgent, AJobLostInAnOutageIsTakenAgainWhenTheBucketIsBack) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  a.store.set_cut_off(true);
  a.run_until(1'000 + kLease / 3 + 2'000);
  ASSERT_EQ(a.executor.count("job.claim_lost"), 1);
  a.store.set_cut_off(false);
  MemoryStore elsewhere(bucket);
  ASSERT_TRUE(elsewhere.put(std::string(keys::kSignal), random_token()));
  a.run_until(1'000 + 6 * kLease);
  EXPECT_GE(claim_of(a.store, job.id).attempt, 2) << "claimed again once the bucket is back";
}

// A transient failure of the reclaiming replace keeps the watch: the job is taken later.
TEST(FleetAgent, ATransientErrorOfAReclaimDoesNotForgetTheJob) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(0);
  FlakyReplaceStore bstore(bucket);
  FakeExecutor bexec(1);
  AgentOptions options;
  options.node = "b";
  options.lease_ms = kLease;
  options.workdir = "/nonexistent";
  int64_t next = 0;
  options.mono_clock = [&next] { return next; };
  Agent b(bstore, &bstore, bexec, options);
  ASSERT_TRUE(b.start(0, 0));
  next = b.step(0, 0);
  bstore.fail_replaces = 1;
  while (next < 6 * kLease) next = std::max(next + 1, b.step(next, next));
  EXPECT_EQ(claim_of(bstore, job.id).node, "b") << "a is dead: someone must take its job";
}

// While one job's inputs are pulled, the node's other claims are renewed too: no watcher
// takes one over while its holder still runs it.
TEST(FleetAgent, PullingOneJobsInputsDoesNotLetAnotherJobRunTwice) {
  auto bucket = std::make_shared<Bucket>();
  MemoryStore astore(bucket);
  FakeExecutor aexec(2);
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-agent-" + random_token());
  std::filesystem::create_directories(dir);
  int64_t clock = 0;
  Node b(bucket, "b", 1);
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.workdir = dir.string();
  options.mono_clock = [&clock] { return clock; };
  // Each shard takes 8 s to come, while b goes on with its own work.
  SlowDataStore data(bucket);
  data.on_data_get = [&] {
    clock += 8'000;
    b.run_until(clock);
  };
  Agent a(astore, &data, aexec, options);
  ASSERT_TRUE(a.start(0, 0));
  clock = 0;
  b.start();
  FleetJob j1 = seed(astore, "any", 1, 5);
  a.step(0, 0);
  ASSERT_EQ(claim_of(astore, j1.id).node, "a");
  b.run_until(0);  // b watches j1
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(astore.put(fmt::format("data/shards/{:02d}", i), "x"));
  seed_with_data(astore, 1, {"shards"});
  clock = 2'000;
  a.step(2'000, 2'000);  // takes the data job: ~168 s of pulling
  b.run_until(clock);
  EXPECT_EQ(claim_of(astore, j1.id).node, "a") << "a renewed j1 between the shards of the other job";
  EXPECT_TRUE(aexec.cancelled.empty());
  EXPECT_EQ(b.executor.jobs.size(), 0u) << "b never ran j1";
  std::filesystem::remove_all(dir);
}

// A watcher that sees a new ETag late in a long step dates it from then, not from the step's
// start, so it never takes the claim of a healthy holder.
TEST(FleetAgent, AWatcherDoesNotTakeAHealthyHoldersClaim) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  a.start();
  FleetJob j = seed(a.store, "any", 1, 5);
  a.run_until(0);
  ASSERT_EQ(claim_of(a.store, j.id).node, "a");
  MemoryStore bstore(bucket);
  FakeExecutor bexec(1);
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-agent-" + random_token());
  std::filesystem::create_directories(dir);
  int64_t clock = 0;
  AgentOptions options;
  options.node = "b";
  options.lease_ms = kLease;
  options.workdir = dir.string();
  options.mono_clock = [&clock] { return clock; };
  SlowDataStore data(bucket);
  data.on_data_get = [&] {
    clock += 8'000;
    a.run_until(clock);
  };
  Agent b(bstore, &data, bexec, options);
  ASSERT_TRUE(b.start(0, 0));
  b.step(0, 0);  // watches j
  a.run_until(9'999);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(bstore.put(fmt::format("data/shards/{:02d}", i), "x"));
  seed_with_data(bstore, 0, {"shards"});
  clock = 20'000;
  b.step(20'000, 20'000);  // takes the data job, pulls for ~168 s while a renews j normally
  b.step(clock, clock);
  EXPECT_EQ(claim_of(bstore, j.id).node, "a") << "a renewed j every 10 s";
  EXPECT_EQ(a.executor.count("job.claim_lost"), 0);
  std::filesystem::remove_all(dir);
}

// Nodes with different leases: the watcher judges a claim by its holder's lease.
TEST(FleetAgent, NodesWithDifferentLeasesNeverBothRunAJob) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1), b(bucket, "b", 1);
  AgentOptions oa;
  oa.node = "a";
  oa.lease_ms = 180'000;
  oa.workdir = "/nonexistent";
  oa.mono_clock = [&a] { return a.now; };
  a.agent = std::make_unique<Agent>(a.store, &a.data, a.executor, oa);
  AgentOptions ob = oa;
  ob.node = "b";
  ob.mono_clock = [&b] { return b.now; };
  ob.lease_ms = 30'000;
  b.agent = std::make_unique<Agent>(b.store, &b.data, b.executor, ob);
  a.start();
  b.start();
  FleetJob j = seed(a.store, "any", 1, 5);
  a.run_until(0);
  b.run_until(0);
  a.store.set_cut_off(true);
  a.run_until(45'000);
  b.run_until(45'000);
  bool b_runs = claim_of(b.store, j.id).node == "b";
  bool a_runs = a.executor.cancelled.empty();
  EXPECT_FALSE(a_runs && b_runs) << "both run j";
}

// A transient failure of the data store while pulling does not fail the job.
TEST(FleetAgent, ATransientDataStoreErrorDoesNotFailTheJob) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  a.start();
  ASSERT_TRUE(a.store.put("data/in/x.json", "{}"));
  a.data.set_cut_off(true);
  FleetJob job = seed_with_data(a.store, 0, {"in/x.json"});
  a.run_until(1'000);
  EXPECT_NE(claim_of(a.store, job.id).state, "failed") << claim_of(a.store, job.id).reason;
}

// A transient error while reading a claim at start does not stop a healthy run.
TEST(FleetAgent, ATransientErrorAtStartDoesNotStopARun) {
  auto bucket = std::make_shared<Bucket>();
  std::string state = (std::filesystem::temp_directory_path() / ("gpuq-agent-state-" + random_token())).string();
  Node a(bucket, "a", 1, state);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.state_file = state;
  int64_t now = 5'000;
  options.mono_clock = [&now] { return now; };
  Agent again(a.store, &a.data, a.executor, options);
  a.store.fail_next(1);
  ASSERT_TRUE(again.start(now, now));
  EXPECT_TRUE(a.executor.cancelled.empty()) << "the run was stopped";
  EXPECT_TRUE(again.held().empty()) << "not known to be ours yet";
  now = 7'000;
  again.step(now, now);
  EXPECT_EQ(again.held(), std::vector<std::string>{job.id}) << "taken back once the store answered";
  EXPECT_TRUE(a.executor.cancelled.empty());
  std::filesystem::remove(state);
}

}  // namespace
}  // namespace gpuq::fleet
