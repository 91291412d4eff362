// SPDX-License-Identifier: Apache-2.0
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

#include "daemon/testing/run_lifecycle_fixture.h"
#include "gpu/discovery.h"

namespace gpuq::daemon::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

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
  EXPECT_EQ(host_->active.at(a).rare->start_failures, 1);
  EXPECT_EQ(host_->active.at(a).rare->start_retry_at_ms, world_->now() + 1000);
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

  runner::CleanupOutcome outcome;
  outcome.confirmed = true;
  outcome.scans = 2;
  world_->answer_cleanup(outcome);

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
  world_->answer_cleanup({});  // not confirmed

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
