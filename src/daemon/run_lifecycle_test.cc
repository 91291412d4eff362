// The run lifecycle alone, on a FakeWorld and a real store, with a small fake host standing in
// for the queue: every step driven explicitly, every outcome checked exactly, no sleeps.
#include "daemon/run_lifecycle.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <map>

#include "daemon/queue_test_support.h"
#include "daemon/testing/fake_world.h"
#include "gpu/discovery.h"

namespace gpuq::daemon::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// The queue as the lifecycle sees it: transactions through the world, jobs in the store and
// their ActiveJob in a map, GPU slots as lists of holders; everything the lifecycle tells it is
// kept for the test to read.
class FakeHost : public RunHost {
  FakeWorld& world_;
  store::Store& store_;

 public:
  FakeHost(FakeWorld& world, store::Store& store, size_t gpus)
      : world_(world), store_(store), holders(gpus), cleaning(gpus, false), attention(gpus) {}

  // As the queue's: the writes kept by commit_later() ride in the next commit.
  Status commit(const std::function<Status()>& writes) override {
    auto committed = world_.commit([&]() -> Status {
      for (const auto& later : later_writes) {
        if (auto st = later(); !st) return st;
      }
      return writes();
    });
    if (committed) later_writes.clear();
    return committed;
  }
  void commit_later(std::function<Status()> writes) override { later_writes.push_back(std::move(writes)); }
  Status add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                   nlohmann::json data) override {
    Event event;
    event.time_ms = world_.now_ms();
    event.kind = kind;
    event.job = job;
    event.run = run;
    event.data = std::move(data);
    auto seq = store_.append_event(std::move(event));
    if (!seq) return tl::unexpected(seq.error());
    return ok();
  }
  Status set_state(int64_t job_id, JobState from, JobState to, const std::string& reason) override {
    if (!is_legal_transition(from, to)) return fail(Code::kInternal, "illegal transition");
    std::optional<int64_t> finished;
    if (is_terminal(to)) finished = world_.now_ms();
    return store_.set_job_state(job_id, to, reason, finished);
  }
  void retry_later(const std::string& key, std::function<void()> attempt) override {
    kept[key] = std::move(attempt);
  }
  // What the queue's retry timer does: every kept attempt once more.
  void retry_kept() {
    auto attempts = std::move(kept);
    kept.clear();
    for (auto& [key, attempt] : attempts) attempt();
  }

  Result<Job> load_job(int64_t id, bool with_runs) override {
    auto job = store_.find_job(id, with_runs);
    if (!job) return tl::unexpected(job.error());
    if (!*job) return fail(Code::kNotFound, "no such job");
    return std::move(**job);
  }
  ActiveJob* active_job(int64_t id) override {
    auto it = active.find(id);
    return it == active.end() ? nullptr : &it->second;
  }
  std::vector<int> lanes_of(const JobSpec&) const override { return {}; }
  void note_start_error(int64_t job_id, std::optional<std::string> why) override {
    if (why) {
      start_errors[job_id] = *why;
    } else {
      start_errors.erase(job_id);
    }
  }
  void note_held_by_daemon(int64_t job_id, const std::string& reason) override { held[job_id] = reason; }
  void note_finished(int64_t job_id, JobState state) override {
    active.erase(job_id);
    finished[job_id] = state;
  }
  void note_footprint(const std::string& name) override { footprints.push_back(name); }
  void request_pass() override { ++passes; }
  void hold_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>&) override {
    for (int slot : slots) holders[slot].push_back(job_id);
  }
  void free_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>&) override {
    for (int slot : slots) std::erase(holders[slot], job_id);
  }
  void set_cleaning(int slot, bool on) override { cleaning[slot] = on; }
  void set_attention(int slot, nlohmann::json a) override { attention[slot] = std::move(a); }
  Metrics& metrics() override { return metrics_; }

  std::vector<std::function<Status()>> later_writes;
  std::map<std::string, std::function<void()>> kept;
  std::map<int64_t, ActiveJob> active;
  std::map<int64_t, std::string> start_errors;
  std::map<int64_t, std::string> held;
  std::map<int64_t, JobState> finished;
  std::vector<std::string> footprints;
  int passes = 0;
  std::vector<std::vector<int64_t>> holders;  // per slot
  std::vector<bool> cleaning;
  std::vector<nlohmann::json> attention;

 private:
  Metrics metrics_;
};

class RunLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_test_dir("gpuq-lifecycle");
    auto opened = store::Store::open((dir_ / "gpuq.db").string(), false);
    ASSERT_TRUE(opened) << opened.error().message;
    store_ = std::move(*opened);
    world_ = std::make_unique<FakeWorld>(*store_);
    auto inventory = gpu::discover("fake:2");
    ASSERT_TRUE(inventory) << inventory.error().message;
    inventory_ = std::move(*inventory);
    host_ = std::make_unique<FakeHost>(*world_, *store_, inventory_.resources.size());
    runs_ = std::make_unique<RunLifecycle>(*world_, *store_, inventory_, config_,
                                           RunPlaces{HomeLayout{"/fake-home"}, "boot-a", 022}, *host_);
  }
  void TearDown() override {
    runs_->stop();
    runs_.reset();
    world_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A pending job in the store and its ActiveJob in the host, as the queue would have them.
  int64_t add_job(int64_t timeout_ms = 0) {
    Job job;
    job.spec.argv = {"sh", "-c", "true"};
    job.spec.cwd = "/tmp";
    job.spec.gpus = 1;
    job.spec.timeout_ms = timeout_ms;
    job.submitted_at_ms = world_->now();
    int64_t id = 0;
    EXPECT_TRUE(world_->commit([&]() -> Status {
      auto inserted = store_->insert_job(job);
      if (!inserted) return tl::unexpected(inserted.error());
      id = *inserted;
      return ok();
    }));
    ActiveJob active;
    active.id = id;
    active.gpus = 1;
    active.timeout_ms = timeout_ms;
    host_->active[id] = active;
    return id;
  }
  std::string run_dir(int64_t job, int run) const { return HomeLayout{"/fake-home"}.run_dir(job, run); }
  Job job(int64_t id) {
    auto found = store_->find_job(id, true);
    EXPECT_TRUE(found && *found);
    return found && *found ? **found : Job{};
  }
  std::vector<std::string> kinds(int64_t job_id) {
    std::vector<std::string> out;
    auto events = store_->events_after(0, 1000);
    EXPECT_TRUE(events);
    for (const auto& e : *events) {
      if (e.job == job_id) out.push_back(e.kind);
    }
    return out;
  }
  static runner::ExitRecord exited(int code) {
    runner::ExitRecord r;
    r.exit_code = code;
    r.started_at_ms = 1;
    r.ended_at_ms = 2;
    return r;
  }

  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<FakeWorld> world_;
  gpu::Inventory inventory_;
  Config config_;
  std::unique_ptr<FakeHost> host_;
  std::unique_ptr<RunLifecycle> runs_;
};

TEST_F(RunLifecycleTest, AStartIsPreparedRecordedAndOnlyThenReleased) {
  int64_t a = add_job();
  int64_t b = add_job();
  int before = world_->commits();
  runs_->start({{a, {0}}, {b, {1}}});

  EXPECT_EQ(world_->commits(), before + 1) << "one commit for all of a pass's starts";
  ASSERT_EQ(world_->shims().size(), 2u);
  for (const auto& shim : world_->shims()) {
    EXPECT_TRUE(shim->released);
    EXPECT_EQ(shim->commits_at_release, before + 1) << "released only after the start's commit";
  }
  EXPECT_EQ(job(a).state, JobState::kRunning);
  EXPECT_THAT(kinds(a), ElementsAre("job.started"));
  EXPECT_EQ(host_->active.at(a).state, JobState::kRunning);
  EXPECT_THAT(host_->holders[0], ElementsAre(a));
  EXPECT_THAT(host_->holders[1], ElementsAre(b));
  ASSERT_NE(runs_->find(a), nullptr);
  EXPECT_EQ(runs_->find(a)->run.run_dir, run_dir(a, 1));
  EXPECT_EQ(runs_->find(a)->run.gpus, std::vector<std::string>{inventory_.resources[0].name});
}

TEST_F(RunLifecycleTest, AStartTheStoreRefusesIsDroppedUnreleasedAndFreesItsGpus) {
  int64_t a = add_job();
  world_->fail_commits(1);
  runs_->start({{a, {0}}});

  ASSERT_EQ(world_->shims().size(), 1u);
  EXPECT_FALSE(world_->shims()[0]->released);
  EXPECT_TRUE(world_->shims()[0]->dropped);
  EXPECT_EQ(job(a).state, JobState::kPending);
  EXPECT_THAT(kinds(a), IsEmpty());
  EXPECT_THAT(host_->holders[0], IsEmpty());
  EXPECT_EQ(runs_->find(a), nullptr);
}

TEST_F(RunLifecycleTest, AStartTheMachineRefusesLeavesTheJobPendingWithBackoff) {
  int64_t a = add_job();
  world_->fail_launches(1);
  runs_->start({{a, {0}}});

  EXPECT_EQ(job(a).state, JobState::kPending);
  EXPECT_THAT(kinds(a), ElementsAre("job.start_failed"));
  EXPECT_THAT(host_->holders[0], IsEmpty());
  EXPECT_EQ(host_->active.at(a).start_failures, 1);
  EXPECT_EQ(host_->active.at(a).start_retry_at_ms, world_->now() + 1000);
  EXPECT_EQ(host_->start_errors.count(a), 1u);
  EXPECT_EQ(host_->passes, 1);
}

TEST_F(RunLifecycleTest, AShimExitSettlesIntoAFinishedRunWhoseEndIsCommitted) {
  int64_t a = add_job();
  runs_->start({{a, {0}}});
  world_->exit_shim(run_dir(a, 1), exited(0));
  world_->run();

  Job done = job(a);
  EXPECT_EQ(done.state, JobState::kSucceeded);
  ASSERT_EQ(done.runs.size(), 1u);
  EXPECT_EQ(done.runs[0].outcome, RunOutcome::kSucceeded);
  EXPECT_THAT(kinds(a), ElementsAre("job.started", "job.succeeded"));
  EXPECT_EQ(host_->finished.at(a), JobState::kSucceeded);
  EXPECT_EQ(runs_->find(a), nullptr);
  // Cleaned up at once (the fake world confirms): the GPU is free, its confirmation kept to
  // ride in the next commit.
  EXPECT_THAT(host_->holders[0], IsEmpty());
  EXPECT_FALSE(host_->cleaning[0]);
  EXPECT_EQ(host_->later_writes.size(), 1u);
  EXPECT_TRUE(runs_->cleanings().empty());
}

TEST_F(RunLifecycleTest, TheEndsOfOneTurnShareOneCommit) {
  int64_t a = add_job();
  int64_t b = add_job();
  runs_->start({{a, {0}}, {b, {1}}});
  world_->exit_shim(run_dir(a, 1), exited(0));
  world_->exit_shim(run_dir(b, 1), exited(1));
  // Cleanups wait, so that the only commits are the ends'.
  world_->set_auto_clean(false);
  int before = world_->commits();
  world_->run();

  EXPECT_EQ(world_->commits(), before + 1);
  EXPECT_EQ(job(a).state, JobState::kSucceeded);
  EXPECT_EQ(job(b).state, JobState::kFailed);
}

TEST_F(RunLifecycleTest, AFailedCommitKeepsTheEndAndRetriesIt) {
  int64_t a = add_job();
  runs_->start({{a, {0}}});
  world_->fail_commits(1);
  world_->exit_shim(run_dir(a, 1), exited(0));
  world_->run();

  // Not on record: the store still says running, and memory agrees.
  EXPECT_EQ(job(a).state, JobState::kRunning);
  EXPECT_THAT(kinds(a), ElementsAre("job.started"));
  ASSERT_NE(runs_->find(a), nullptr);
  ASSERT_TRUE(runs_->find(a)->ended);
  EXPECT_EQ(runs_->find(a)->ended->outcome, RunOutcome::kSucceeded);
  EXPECT_EQ(host_->kept.count(fmt::format("finish:{}", a)), 1u);
  EXPECT_EQ(host_->finished.count(a), 0u);

  host_->retry_kept();
  EXPECT_EQ(job(a).state, JobState::kSucceeded);
  EXPECT_THAT(kinds(a), ElementsAre("job.started", "job.succeeded"));
  EXPECT_EQ(runs_->find(a), nullptr);
  EXPECT_TRUE(host_->kept.empty());
}

TEST_F(RunLifecycleTest, ATimeoutStopsTheRunWithSigtermThroughItsShim) {
  int64_t a = add_job(5'000);
  runs_->start({{a, {0}}});
  FakeWorld::Shim* shim = world_->shim_of(run_dir(a, 1));
  ASSERT_NE(shim, nullptr);
  world_->advance(4'999);
  EXPECT_THAT(shim->signals, IsEmpty());
  world_->advance(1);
  EXPECT_THAT(shim->signals, ElementsAre(SIGTERM));
  EXPECT_EQ(runs_->find(a)->run.stop_reason, StopReason::kTimeout);
  EXPECT_TRUE(runs_->find(a)->stop_recorded);
  EXPECT_EQ(job(a).runs[0].stop_reason, StopReason::kTimeout);
  EXPECT_THAT(kinds(a), ElementsAre("job.started", "job.timeout"));
}

TEST_F(RunLifecycleTest, ACancelWhileTheStoreFailsSignalsAtOnceAndIsRecordedLater) {
  int64_t a = add_job();
  runs_->start({{a, {0}}});
  world_->fail_commits(1);
  EXPECT_FALSE(runs_->cancel(a, nlohmann::json::object()));
  EXPECT_THAT(world_->shim_of(run_dir(a, 1))->signals, ElementsAre(SIGTERM));
  EXPECT_EQ(job(a).runs[0].stop_reason, StopReason::kNone);

  host_->retry_kept();
  EXPECT_TRUE(runs_->find(a)->stop_recorded);
  EXPECT_EQ(job(a).runs[0].stop_reason, StopReason::kCancel);
  EXPECT_THAT(kinds(a), ElementsAre("job.started", "job.cancel_requested"));
}

TEST_F(RunLifecycleTest, CleanupHoldsTheGpusUntilConfirmed) {
  world_->set_auto_clean(false);
  int64_t a = add_job();
  runs_->start({{a, {0}}});
  world_->exit_shim(run_dir(a, 1), exited(0));
  world_->run();

  EXPECT_EQ(job(a).state, JobState::kSucceeded);
  EXPECT_THAT(host_->holders[0], ElementsAre(a)) << "the GPU is held until its cleanup is confirmed";
  EXPECT_TRUE(host_->cleaning[0]);
  ASSERT_EQ(runs_->cleanings().size(), 1u);
  ASSERT_EQ(world_->cleanup_calls().size(), 1u);
  int passes = host_->passes;

  auto call = std::move(world_->cleanup_calls().front());
  world_->cleanup_calls().pop_front();
  runner::CleanupOutcome outcome;
  outcome.key = call.target.key;
  outcome.confirmed = true;
  outcome.scans = 2;
  call.done(outcome);

  EXPECT_THAT(host_->holders[0], IsEmpty());
  EXPECT_FALSE(host_->cleaning[0]);
  EXPECT_TRUE(host_->attention[0].is_null());
  EXPECT_TRUE(runs_->cleanings().empty());
  EXPECT_EQ(host_->passes, passes + 1);
}

TEST_F(RunLifecycleTest, ACleanupThatCannotBeConfirmedPutsTheGpuInAttention) {
  world_->set_auto_clean(false);
  int64_t a = add_job();
  runs_->start({{a, {1}}});
  world_->exit_shim(run_dir(a, 1), exited(0));
  world_->run();
  ASSERT_EQ(world_->cleanup_calls().size(), 1u);
  auto call = std::move(world_->cleanup_calls().front());
  world_->cleanup_calls().pop_front();
  runner::CleanupOutcome outcome;
  outcome.key = call.target.key;
  outcome.confirmed = false;
  call.done(outcome);

  EXPECT_THAT(host_->holders[1], IsEmpty());
  EXPECT_EQ(host_->attention[1].value("job", int64_t{0}), a);
  EXPECT_THAT(kinds(a), ElementsAre("job.started", "job.succeeded", "job.cleanup", "resource.attention"));
  auto attention = store_->runs_in_cleanup(store::CleanupState::kAttention);
  ASSERT_TRUE(attention);
  EXPECT_EQ(attention->size(), 1u);
}

TEST_F(RunLifecycleTest, AVanishedShimIsALostRunRequeuedOnce) {
  int64_t a = add_job();
  runs_->start({{a, {0}}});
  world_->vanish_shim(run_dir(a, 1));
  world_->run();

  EXPECT_EQ(job(a).state, JobState::kPending);
  EXPECT_EQ(job(a).runs[0].outcome, RunOutcome::kLost);
  EXPECT_THAT(kinds(a), ElementsAre("job.started", "job.lost", "job.requeued"));
  EXPECT_EQ(host_->active.at(a).state, JobState::kPending);
  EXPECT_EQ(world_->swept_sessions().size(), 1u);
  EXPECT_EQ(runs_->find(a), nullptr);
}

TEST_F(RunLifecycleTest, RecoveryAdoptsALiveShimAndSettlesOneThatEnded) {
  int64_t a = add_job();
  int64_t b = add_job();
  runs_->start({{a, {0}}, {b, {1}}});
  pid_t pid_a = runs_->find(a)->run.shim_pid;
  uint64_t ticks_a = runs_->find(a)->run.shim_start_ticks;
  // The daemon stops; job b's run ends meanwhile; a new lifecycle recovers both.
  runs_->stop();
  world_->put_exit_record(run_dir(b, 1), exited(0));
  world_->add_live_shim(pid_a, ticks_a);
  host_->holders.assign(2, {});
  runs_ = std::make_unique<RunLifecycle>(*world_, *store_, inventory_, config_,
                                         RunPlaces{HomeLayout{"/fake-home"}, "boot-a", 022}, *host_);
  ASSERT_TRUE(runs_->recover());
  world_->run();

  EXPECT_EQ(job(a).state, JobState::kRunning);
  EXPECT_THAT(kinds(a), ElementsAre("job.started", "job.adopted"));
  ASSERT_NE(runs_->find(a), nullptr);
  EXPECT_THAT(host_->holders[0], ElementsAre(a));
  EXPECT_EQ(job(b).state, JobState::kSucceeded);
  EXPECT_THAT(kinds(b), ElementsAre("job.started", "job.succeeded"));
  EXPECT_THAT(host_->holders[1], IsEmpty());
}

}  // namespace
}  // namespace gpuq::daemon::testing
