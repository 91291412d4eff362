// SPDX-License-Identifier: Apache-2.0
// The fleet agent on virtual clocks over an in-memory bucket, with fake daemons: claims,
// leases, reclaims, cut-off holders, cancels, dependencies, data, restarts, stale nodes and
// what an idle node costs. Leases through long steps and failures: agent_resilience_test.cc.
// The same agent against a real S3 API server and real daemons: tests/fleet.
#include "fleet/agent.h"

#include "fleet/agent_test_support.h"

namespace gpuq::fleet {
namespace {

using namespace testing;

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
  EXPECT_EQ(local.env.at("GPUQ_ATTEMPT"), "1");
  EXPECT_FALSE(local.fleet_resume) << "a first attempt has nothing to resume from";
  EXPECT_EQ(local.env.size(), 6u) << "the node's PATH and HOME and the four fleet variables: nothing else";
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

TEST(FleetAgent, AJobsStepsAndImageReachTheLocalJob) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 2);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  job.spec.script_name.clear();
  job.spec.script_text.clear();
  JobStep prep;
  prep.name = "prep";
  prep.script_name = "prep.sh";
  prep.script_text = "#!/bin/bash\nmake\n";
  prep.timeout_ms = 60'000;
  JobStep train;
  train.name = "train";
  train.argv = {"python", "train.py"};
  train.image = "ubuntu:24.04";
  train.done_if = "test -s out";
  job.spec.steps = {prep, train};
  job.spec.image = "busybox";
  job.spec.pull = PullPolicy::kNever;
  job.spec.container_user = "0:0";
  publish(a.store, job);
  a.run_until(2'000);
  ASSERT_EQ(a.executor.specs.size(), 1u);
  const JobSpec& local = a.executor.specs.begin()->second;
  EXPECT_EQ(local.steps, job.spec.steps);
  EXPECT_EQ(local.image, "busybox");
  EXPECT_EQ(local.pull, PullPolicy::kNever);
  EXPECT_EQ(local.container_user, "0:0");
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

// Node "a" with a data store and a fresh workdir of its own (removed by the test).
std::filesystem::path start_with_workdir(Node& a) {
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
  return dir;
}

TEST(FleetAgent, InputsArePulledBeforeTheStartAndOutputsPushedAtTheEnd) {
  Node a(std::make_shared<Bucket>(), "a", 1);
  const auto dir = start_with_workdir(a);
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

// "ckpt/" (a trailing '/') is a directory: pulled as the folder of objects under it, pushed as
// every file beneath it; a file of that name is not it.
TEST(FleetAgent, ADeclaredPathEndingInASlashIsADirectoryMovedWhole) {
  Node a(std::make_shared<Bucket>(), "a", 1);
  const auto dir = start_with_workdir(a);
  ASSERT_TRUE(a.data.put("data/shards/0.bin", "zero"));
  ASSERT_TRUE(a.data.put("data/shards/deep/1.bin", "one"));
  FleetJob job = seed_with_data(a.store, 1, {"shards/"}, {"ckpt/", "notes/"});
  a.run_until(1'000);
  ASSERT_EQ(a.executor.jobs.size(), 1u) << "the directory input was pulled and the run started";
  EXPECT_EQ(os::read_file((dir / "shards/0.bin").string()).value_or("") +
                os::read_file((dir / "shards/deep/1.bin").string()).value_or(""), "zeroone");
  std::filesystem::create_directories(dir / "ckpt/step-2");
  std::ofstream(dir / "ckpt/latest.pt") << "weights";
  std::ofstream(dir / "ckpt/step-2/optimizer.pt") << "moments";
  std::ofstream(dir / "notes") << "a file, not the directory notes/";
  a.executor.end(a.executor.jobs.begin()->first, 0);
  a.nudge();
  a.run_until(1'001);
  EXPECT_EQ(a.data.get("data/ckpt/latest.pt")->body, "weights");
  EXPECT_EQ(a.data.get("data/ckpt/step-2/optimizer.pt")->body, "moments");
  EXPECT_FALSE(a.data.get("data/notes"));
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "succeeded");
  EXPECT_NE(claim.reason.find("output notes/ matched nothing (a path ending in / is a directory)"), std::string::npos) << claim.reason;
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
}  // namespace
}  // namespace gpuq::fleet

namespace gpuq::fleet {
namespace {

using namespace testing;

// The local job carries the fleet submitter's user (docs/fleet.md), for `gpuq report`; "" (the
// node daemon's user) when the spec does not say.
TEST(FleetAgent, TheLocalJobIsTheFleetSubmittersUser) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 2);
  a.start();
  FleetJob known = seed(a.store, "any", 1, 5);
  known.submitted_by = "carol@box3";
  publish(a.store, known);
  FleetJob unknown = seed(a.store, "any", 1, 6);
  unknown.submitted_by = "?@box3";
  publish(a.store, unknown);
  a.run_until(2'000);
  std::map<std::string, std::string> users;
  for (const auto& [id, spec] : a.executor.specs) users[spec.fleet_id] = spec.user;
  EXPECT_EQ(users, (std::map<std::string, std::string>{{known.id, "carol"}, {unknown.id, ""}}));
}


// A node of `bucket` whose workdir is a fresh temporary directory (removed by the test).
std::unique_ptr<Node> node_with_workdir(std::shared_ptr<Bucket> bucket, const std::string& name) {
  auto node = std::make_unique<Node>(bucket, name, 1);
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-agent-" + random_token());
  std::filesystem::create_directories(dir);
  node->workdir = dir.string();
  AgentOptions options;
  options.node = name;
  options.lease_ms = kLease;
  options.sync_every_ms = 10'000;
  options.workdir = node->workdir;
  Node* raw = node.get();
  options.mono_clock = [raw] { return raw->now; };
  node->agent = std::make_unique<Agent>(node->store, &node->data, node->executor, options);
  return node;
}

// Node a pushes a checkpoint while its job runs, then freezes; b takes the job over after a
// lease and starts it from that checkpoint. `resume` is the job's `# gpuq-resume:`.
void reclaim_after_a_checkpoint(bool resume) {
  auto bucket = std::make_shared<Bucket>();
  auto a = node_with_workdir(bucket, "a");
  auto b = node_with_workdir(bucket, "b");
  a->start();
  b->start();
  FleetJob job;
  job.id = new_job_id(9);
  job.klass = "any";
  job.submitted_ms = 9;
  job.spec.gpus = 1;
  job.spec.script_text = "#!/bin/bash\n";
  job.spec.outputs = {"ckpt/*.pt"};
  job.spec.resume = resume;
  publish(a->store, job);
  a->run_until(1'000);
  ASSERT_EQ(a->executor.jobs.size(), 1u);
  b->run_until(1'000);  // b watches a's claim
  std::filesystem::create_directories(a->workdir + "/ckpt");
  std::ofstream(a->workdir + "/ckpt/step-100.pt") << "weights at step 100";
  a->run_until(12'000);  // a sync: the checkpoint is pushed and recorded
  ASSERT_EQ(a->data.get("data/ckpt/step-100.pt")->body, "weights at step 100");
  auto record = a->store.get(keys::outputs(job.id));
  ASSERT_TRUE(record) << "the record of outputs was written";
  auto outputs = outputs_from_json(nlohmann::json::parse(record->body));
  ASSERT_TRUE(outputs);
  ASSERT_EQ(outputs->size(), 1u);
  EXPECT_EQ((*outputs)[0].path, "ckpt/step-100.pt");
  EXPECT_EQ((*outputs)[0].state, "pushed");
  EXPECT_EQ((*outputs)[0].size, 19);
  EXPECT_EQ((*outputs)[0].attempt, 1);
  // a freezes; b takes the job over after a lease of an unchanged claim.
  b->run_until(12'000 + 2 * kLease);
  Claim claim = claim_of(b->store, job.id);
  ASSERT_EQ(claim.node, "b");
  ASSERT_EQ(claim.attempt, 2);
  ASSERT_EQ(b->executor.specs.size(), 1u);
  const JobSpec& spec = b->executor.specs.begin()->second;
  EXPECT_EQ(spec.env.at("GPUQ_ATTEMPT"), "2");
  const std::string pulled = b->workdir + "/ckpt/step-100.pt";
  if (resume) {
    EXPECT_TRUE(spec.fleet_resume) << "its first run sees GPUQ_RESUME=1";
    EXPECT_EQ(os::read_file(pulled).value_or("missing"), "weights at step 100")
        << "the checkpoint was pulled before the start";
  } else {
    EXPECT_FALSE(spec.fleet_resume);
    EXPECT_FALSE(std::filesystem::exists(pulled)) << "# gpuq-resume: no starts afresh";
  }
  std::filesystem::remove_all(a->workdir);
  std::filesystem::remove_all(b->workdir);
}

TEST(FleetAgent, AnUnreadableRecordOfOutputsIsSaidAndTheReclaimedJobStartsAfresh) {
  auto bucket = std::make_shared<Bucket>();
  auto a = node_with_workdir(bucket, "a");
  auto b = node_with_workdir(bucket, "b");
  a->start();
  b->start();
  FleetJob job = seed_with_data(a->store, 1, {}, {"ckpt/*.pt"});
  a->run_until(1'000);
  ASSERT_EQ(a->executor.jobs.size(), 1u);
  b->run_until(1'000);
  ASSERT_TRUE(a->store.put(keys::outputs(job.id), "{not json"));
  b->run_until(1'000 + 2 * kLease);  // a froze: b takes the job over
  ASSERT_EQ(claim_of(b->store, job.id).node, "b");
  ASSERT_EQ(b->executor.count("job.outputs_unreadable"), 1);
  EXPECT_EQ(b->executor.events.front().kind, "job.outputs_unreadable");
  ASSERT_EQ(b->executor.specs.size(), 1u) << "it starts rather than never";
  EXPECT_FALSE(b->executor.specs.begin()->second.fleet_resume) << "nothing to resume from";
  std::filesystem::remove_all(a->workdir);
  std::filesystem::remove_all(b->workdir);
}

TEST(FleetAgent, AReclaimedJobStartsFromTheOutputsItsEarlierAttemptPushed) { reclaim_after_a_checkpoint(true); }

TEST(FleetAgent, AJobThatSaysResumeNoStartsAfreshWhenReclaimed) { reclaim_after_a_checkpoint(false); }

// A store whose writes of data fail while `refuse` is set.
class RefusingDataStore : public MemoryStore {
 public:
  using MemoryStore::MemoryStore;
  bool refuse = true;
  Result<ObjectInfo> put_file(const std::string& key, const std::string& path) override {
    if (refuse) return fail(Code::kIoError, "disk quota exceeded (test)");
    return MemoryStore::put_file(key, path);
  }
};

TEST(FleetAgent, AnOutputThatCannotBePushedIsRetriedAndNamedUntilItIs) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-agent-" + random_token());
  std::filesystem::create_directories(dir / "out");
  RefusingDataStore data(bucket);
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.sync_every_ms = 1'000;
  options.workdir = dir.string();
  options.mono_clock = [&a] { return a.now; };
  a.agent = std::make_unique<Agent>(a.store, &data, a.executor, options);
  a.start();
  FleetJob job = seed_with_data(a.store, 1, {}, {"out/result.txt"});
  a.run_until(500);
  ASSERT_EQ(a.executor.jobs.size(), 1u);
  std::ofstream(dir / "out/result.txt") << "42";
  a.run_until(2'500);  // the first sync (at the first tending after sync_every): refused
  EXPECT_EQ(a.executor.count("job.output_failed"), 1);
  const auto& failed = a.executor.events.back();
  EXPECT_EQ(failed.kind, "job.output_failed");
  EXPECT_EQ(failed.data["path"], "out/result.txt");
  EXPECT_NE(failed.data["error"].get<std::string>().find("disk quota exceeded"), std::string::npos);
  a.run_until(12'000);  // renewed since: the claim says why
  EXPECT_NE(claim_of(a.store, job.id).reason.find("output out/result.txt could not be pushed"), std::string::npos)
      << claim_of(a.store, job.id).reason;
  const int failures = a.executor.count("job.output_failed");
  EXPECT_GE(failures, 2) << "retried";
  EXPECT_LE(failures, 5) << "with a backoff, not at every sync";
  // The store takes it again: pushed, and the reason is clear at the next renewal.
  data.refuse = false;
  a.run_until(80'000);
  EXPECT_EQ(a.data.get("data/out/result.txt")->body, "42");
  EXPECT_EQ(claim_of(a.store, job.id).reason, "");
  // An output refused to the end is named in the outcome.
  data.refuse = true;
  std::ofstream(dir / "out/result.txt") << "43";
  a.executor.end(a.executor.jobs.begin()->first, 0);
  a.nudge();
  a.run_until(200'000);
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "succeeded");
  EXPECT_NE(claim.reason.find("output out/result.txt was not pushed: disk quota exceeded"), std::string::npos)
      << claim.reason;
  auto record = outputs_from_json(nlohmann::json::parse(a.store.get(keys::outputs(job.id))->body));
  ASSERT_TRUE(record);
  ASSERT_EQ(record->size(), 1u);
  EXPECT_EQ((*record)[0].state, "not_pushed");
  EXPECT_EQ((*record)[0].size, 2) << "the size of the version the store has";
  std::filesystem::remove_all(dir);
}

TEST(FleetAgent, ANodeShortOfDiskTakesNoNewJobSaysWhyAndTakesJobsAgainOnceThereIsRoom) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 2);
  a.executor.workdir_free_bytes = int64_t{3} << 30;  // under the 10 GiB floor
  a.executor.shm_free_bytes = int64_t{1} << 30;
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(40'000);  // polls, scans and a second heartbeat
  EXPECT_FALSE(a.store.get(keys::claim(job.id))) << "no claim while the workdir is short of space";
  EXPECT_TRUE(a.executor.specs.empty());
  ASSERT_EQ(a.executor.count("node.low_disk"), 1) << "said once, not at every heartbeat";
  auto low = std::find_if(a.executor.events.begin(), a.executor.events.end(),
                          [](const auto& e) { return e.kind == "node.low_disk"; });
  EXPECT_EQ(low->data["free_bytes"], int64_t{3} << 30);
  EXPECT_EQ(low->data["min_free_disk_bytes"], kMinFreeDisk);
  auto beat = heartbeat_from_json(nlohmann::json::parse(a.store.get(keys::heartbeat("a"))->body));
  ASSERT_TRUE(beat);
  EXPECT_EQ(beat->workdir_free_bytes, int64_t{3} << 30);
  EXPECT_EQ(beat->shm_free_bytes, int64_t{1} << 30);
  EXPECT_EQ(beat->min_free_disk_bytes, kMinFreeDisk);
  EXPECT_NE(beat->not_taking.find("min_free_disk"), std::string::npos) << beat->not_taking;

  a.executor.workdir_free_bytes = int64_t{50} << 30;  // room again: seen at the next heartbeat
  a.run_until(70'000);
  EXPECT_EQ(a.executor.count("node.disk_ok"), 1);
  EXPECT_EQ(claim_of(a.store, job.id).node, "a") << "the job left waiting is taken";
  beat = heartbeat_from_json(nlohmann::json::parse(a.store.get(keys::heartbeat("a"))->body));
  ASSERT_TRUE(beat);
  EXPECT_TRUE(beat->not_taking.empty());
}

TEST(FleetAgent, AJobPinnedToOneGpuRunsInThatGpusReservationAndAGpuTheNodeLacksFailsIt) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 2);
  a.start();
  auto pinned = [&](int gpu, int64_t submitted_ms) {
    FleetJob job;
    job.id = new_job_id(submitted_ms);
    job.node = "a";
    job.submitted_ms = submitted_ms;
    job.spec.gpus = 1;
    job.spec.script_text = "#!/bin/bash\n";
    job.spec.reservation = gpu_reservation(gpu);
    publish(a.store, job);
    return job;
  };
  FleetJob on_one = pinned(1, 5);
  FleetJob on_five = pinned(5, 6);
  a.run_until(2'000);
  EXPECT_EQ(a.executor.reserved, (std::map<std::string, int>{{"fleet-gpu1", 1}}));
  ASSERT_EQ(a.executor.specs.size(), 1u);
  EXPECT_EQ(a.executor.specs.begin()->second.reservation, "fleet-gpu1");
  EXPECT_EQ(claim_of(a.store, on_one.id).state, "running");
  Claim failed = claim_of(a.store, on_five.id);
  EXPECT_EQ(failed.state, "failed");
  EXPECT_NE(failed.reason.find("pinned to gpu5 of node a"), std::string::npos) << failed.reason;
}

}  // namespace
}  // namespace gpuq::fleet
