// SPDX-License-Identifier: Apache-2.0
// The fleet agent when steps are long and the store fails: leases kept through long scans and
// long input pulls, claims lost in outages taken again, lost races and failed reclaims that
// are not forgotten, transient errors that never fail a job or stop a run, nodes with
// different leases. Virtual clocks, an in-memory bucket, fake daemons (agent_test_support.h).
#include "fleet/agent.h"

#include <filesystem>
#include <fstream>

#include "fleet/agent_test_support.h"

namespace gpuq::fleet {
namespace {

using namespace testing;

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
  Result<ObjectInfo> put_file(const std::string& key, const std::string& path) override {
    before_("put_file", key);
    return inner_.put_file(key, path);
  }
  Result<ObjectInfo> get_file(const std::string& key, const std::string& target) override {
    before_("get_file", key);
    return inner_.get_file(key, target);
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

// A pull runs off the agent's thread: the claim is renewed all the while, however long it takes.
TEST(FleetAgent, AnInputThatTakesLongerThanALeaseToPullKeepsTheClaimRenewed) {
  auto bucket = std::make_shared<Bucket>();
  ManualTransfersNode a(bucket);
  ASSERT_TRUE(a.agent->start(0, 0));
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a.store.put(fmt::format("data/shards/{:02d}", i), "x"));
  FleetJob job = seed_with_data(a.store, 0, {"shards"});
  a.agent->step(0, 0);
  ASSERT_EQ(a.transfers.waiting(), 1u) << "the pull was handed to the transfer queue";
  // Three leases pass while the pull is in flight: the agent steps on and renews.
  for (int64_t t = 1'000; t <= 3 * kLease; t += 1'000) a.agent->step(t, t);
  EXPECT_TRUE(a.executor.jobs.empty()) << "not started before its inputs are there";
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "running");
  EXPECT_GE(claim.renewal, 3 * 6 - 1) << "renewed every lease/6 while the shards came";
  EXPECT_EQ(a.executor.count("job.claim_lost"), 0);
  a.transfers.run_all();
  a.agent->nudge();  // as the transfer worker does when a work ends
  a.agent->step(3 * kLease + 1, 3 * kLease + 1);
  ASSERT_EQ(a.executor.jobs.size(), 1u) << "handed to the daemon once every shard was there";
  EXPECT_TRUE(std::filesystem::exists(a.dir / "shards/19"));
  EXPECT_EQ(a.executor.count("job.claim_lost"), 0);
  EXPECT_TRUE(a.executor.cancelled.empty());
}

// A job declaring out/*.txt, claimed by `a` and handed to its daemon, which wrote
// out/result.txt; returns the node's time.
int64_t start_job_with_outputs(ManualTransfersNode& a, FleetJob& job) {
  EXPECT_TRUE(a.agent->start(0, 0));
  job = seed_with_data(a.store, 1, {}, {"out/*.txt"});
  int64_t t = 0;
  while (a.executor.jobs.empty() && t < kLease) {
    t += 100;
    a.agent->step(t, t);
    a.transfers.run_all();
  }
  std::filesystem::create_directories(a.dir / "out");
  std::ofstream(a.dir / "out/result.txt") << "42";
  return t;
}

// The output start_job_with_outputs wrote, as its push left it in the data store.
void expect_output_pushed(ManualTransfersNode& a) {
  auto pushed = a.data.get("data/out/result.txt");
  ASSERT_TRUE(pushed) << pushed.error().message;
  EXPECT_EQ(pushed->body, "42");
}

// A job that ends while a push of its outputs begun during its run is still in flight waits
// for that push, and its claim is renewed at the lease's pace meanwhile, not at every step (the
// end's first renewal was taken for a first call at every step until a round of its own began).
TEST(FleetAgent, AnEndWaitingForAPushInFlightRenewsAtTheLeasesPace) {
  auto bucket = std::make_shared<Bucket>();
  ManualTransfersNode a(bucket);
  FleetJob job;
  int64_t t = start_job_with_outputs(a, job);
  ASSERT_EQ(a.executor.jobs.size(), 1u);
  const int64_t local_id = a.executor.jobs.begin()->first;
  while (a.transfers.waiting() == 0 && t < 10 * kLease) {
    t += 1'000;
    a.agent->step(t, t);
  }
  ASSERT_EQ(a.transfers.waiting(), 1u) << "a sync while it ran handed a push to the queue";

  a.executor.end(local_id, 0);
  a.agent->nudge();
  const int before = claim_of(a.store, job.id).renewal;
  const int64_t ended = t;
  for (t = ended + 100; t <= ended + kLease / 2; t += 100) a.agent->step(t, t);  // 300 steps
  EXPECT_EQ(claim_of(a.store, job.id).state, "running") << "its end waits for the push";
  const int renewals = claim_of(a.store, job.id).renewal - before;
  EXPECT_GE(renewals, 1) << "renewed at its end";
  EXPECT_LE(renewals, 4) << "every lease/6 (10 s), not at each of the 300 steps";

  a.transfers.run_all();
  a.agent->nudge();
  for (int i = 0; i < 5 && claim_of(a.store, job.id).state == "running"; ++i) {
    t += 100;
    a.agent->step(t, t);
    a.transfers.run_all();
  }
  EXPECT_EQ(claim_of(a.store, job.id).state, "succeeded");
  expect_output_pushed(a);
}

// At a job's end its log's last part and its outputs are pushed side by side: a log whose push
// fails (tried again for up to 1+2+4 sync intervals) does not hold the outputs back.
TEST(FleetAgent, AFailingLastLogPushDoesNotHoldTheOutputsBack) {
  auto bucket = std::make_shared<Bucket>();
  ManualTransfersNode a(bucket);
  FleetJob job;
  int64_t t = start_job_with_outputs(a, job);
  ASSERT_EQ(a.executor.jobs.size(), 1u);
  std::ofstream(a.dir / "run.log") << "done\n";
  a.store.fail_puts_of(keys::log(job.id, 1), -1);
  a.executor.end(a.executor.jobs.begin()->first, 0, (a.dir / "run.log").string());
  a.agent->nudge();
  t += 100;
  a.agent->step(t, t);
  EXPECT_EQ(a.transfers.waiting(), 1u) << "the outputs' push began with the end's first try of the log";
  a.transfers.run_all();
  expect_output_pushed(a);
  for (int i = 0; i < 2000 && claim_of(a.store, job.id).state == "running"; ++i) {
    t += 1'000;
    a.agent->step(t, t);
    a.transfers.run_all();
  }
  Claim claim = claim_of(a.store, job.id);
  EXPECT_EQ(claim.state, "succeeded");
  EXPECT_NE(claim.reason.find("its log's last part could not be published"), std::string::npos) << claim.reason;
}

// The end's first renewal fails: nothing is pushed before a renewal succeeds. The outputs'
// keys are every attempt's, so a node whose claim was taken over meanwhile must not push.
TEST(FleetAgent, NothingIsPushedAtTheEndBeforeARenewalSucceeds) {
  auto bucket = std::make_shared<Bucket>();
  ManualTransfersNode a(bucket);
  FleetJob job;
  int64_t t = start_job_with_outputs(a, job);
  ASSERT_EQ(a.executor.jobs.size(), 1u);
  const int before = claim_of(a.store, job.id).renewal;
  a.store.fail_puts_of(keys::claim(job.id), 1);
  a.executor.end(a.executor.jobs.begin()->first, 0);
  a.agent->nudge();
  t += 100;
  a.agent->step(t, t);  // the end's first tend: its renewal fails
  ASSERT_EQ(claim_of(a.store, job.id).renewal, before);
  EXPECT_EQ(a.transfers.waiting(), 0u) << "nothing pushed after a failed renewal";
  a.agent->nudge();  // tended again at once (as when a transfer ends)
  const int64_t ended = t;
  while (a.transfers.waiting() == 0 && t < ended + kLease) {
    t += 100;
    a.agent->step(t, t);
  }
  ASSERT_EQ(a.transfers.waiting(), 1u) << "its outputs' push began";
  EXPECT_GT(claim_of(a.store, job.id).renewal, before) << "after a renewal that succeeded";
  a.transfers.run_all();
  expect_output_pushed(a);
}

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

// A store whose next replace lands but is reported as lost to a condition: what a renewal
// sees when its answer timed out, its retry found its own write (412) and the read-back that
// would have settled it failed too.
class LandedButRefusedStore : public MemoryStore {
 public:
  using MemoryStore::MemoryStore;
  bool next_replace_lands_refused = false;
  Result<std::string> replace(const std::string& key, std::string_view body, const std::string& etag) override {
    auto written = MemoryStore::replace(key, body, etag);
    if (written && next_replace_lands_refused) {
      next_replace_lands_refused = false;
      return fail(Code::kConflict, "PUT (replace): HTTP 412 (PreconditionFailed) (after 2 attempts)");
    }
    return written;
  }
};

TEST(FleetAgent, ARenewalThatLandedButWasReportedRefusedKeepsTheClaim) {
  auto bucket = std::make_shared<Bucket>();
  Node a(bucket, "a", 1);
  LandedButRefusedStore store(bucket);
  AgentOptions options;
  options.node = "a";
  options.lease_ms = kLease;
  options.workdir = "/nonexistent";
  options.mono_clock = [&a] { return a.now; };
  a.agent = std::make_unique<Agent>(store, &a.data, a.executor, options);
  a.start();
  FleetJob job = seed(a.store, "any", 1, 5);
  a.run_until(1'000);
  ASSERT_EQ(claim_of(a.store, job.id).node, "a");
  const int64_t renewals = claim_of(a.store, job.id).renewal;
  store.next_replace_lands_refused = true;
  a.run_until(kLease);
  EXPECT_EQ(a.executor.count("job.claim_lost"), 0) << "its own renewal is not someone else's";
  EXPECT_TRUE(a.executor.cancelled.empty());
  EXPECT_GE(claim_of(a.store, job.id).renewal, renewals + 5) << "renewed on, from the claim's ETag";
}

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
  ManualTransfersNode a(bucket, 2);
  Node b(bucket, "b", 1);
  ASSERT_TRUE(a.agent->start(0, 0));
  b.start();
  FleetJob j1 = seed(a.store, "any", 1, 5);
  a.agent->step(0, 0);
  ASSERT_EQ(claim_of(a.store, j1.id).node, "a");
  b.run_until(0);  // b watches j1
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a.store.put(fmt::format("data/shards/{:02d}", i), "x"));
  seed_with_data(a.store, 1, {"shards"});
  // a takes the data job; its pull stays in flight for three leases while both nodes step.
  for (int64_t t = 2'000; t <= 3 * kLease; t += 1'000) {
    a.agent->step(t, t);
    b.run_until(t);
  }
  ASSERT_EQ(a.transfers.waiting(), 1u);
  EXPECT_EQ(claim_of(a.store, j1.id).node, "a") << "a renewed j1 while the other job's inputs came";
  EXPECT_TRUE(a.executor.cancelled.empty());
  EXPECT_EQ(b.executor.jobs.size(), 0u) << "b never ran j1";
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

TEST(FleetAgent, AJobWhoseInputsArePulledHoldsItsGpusAgainstTheNextJob) {
  auto bucket = std::make_shared<Bucket>();
  ManualTransfersNode a(bucket, 1);
  ASSERT_TRUE(a.agent->start(0, 0));
  ASSERT_TRUE(a.store.put("data/in/x", "x"));
  FleetJob first = seed_with_data(a.store, 1, {"in/x"});
  a.agent->step(0, 0);
  ASSERT_EQ(a.transfers.waiting(), 1u);
  FleetJob second = seed(a.store, "any", 1, 50);
  for (int64_t t = 1'000; t <= 20'000; t += 1'000) a.agent->step(t, t);
  EXPECT_EQ(claim_of(a.store, first.id).node, "a");
  EXPECT_FALSE(a.store.get(keys::claim(second.id))) << "the one GPU is the pulling job's";
  a.transfers.run_all();
  a.agent->nudge();
  a.agent->step(21'000, 21'000);
  EXPECT_EQ(a.executor.jobs.size(), 1u);
}

}  // namespace
}  // namespace gpuq::fleet
