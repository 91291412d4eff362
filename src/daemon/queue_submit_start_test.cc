// SPDX-License-Identifier: Apache-2.0
// A submit that finds an idle GPU starts its job in its own transaction (queue_submit_start.cc):
// one commit for the job and its start, the shim released after it, and every case where the
// next pass must decide instead left to the pass.
#include <gmock/gmock.h>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

using ::testing::ElementsAre;

TEST_F(QueueTest, ASubmitOnAnIdleGpuStartsItsJobInItsOwnCommit) {
  start("fake:1");
  int before = world_->commits();
  auto submitted = queue_->submit(command("true"));
  ASSERT_TRUE(submitted) << submitted.error().message;
  int64_t id = submitted->job.id;
  EXPECT_EQ(world_->commits(), before + 1) << "the job and its start in one transaction";
  EXPECT_EQ(submitted->job.state, JobState::kRunning) << "the answer says what happened";
  ASSERT_EQ(submitted->job.runs.size(), 1u) << "and shows the run it began";
  EXPECT_EQ(submitted->job.runs[0].number, 1);
  EXPECT_EQ(submitted->job.runs[0].outcome, RunOutcome::kRunning);
  ASSERT_NE(shim(id, 1), nullptr);
  EXPECT_TRUE(shim(id, 1)->released);
  EXPECT_EQ(shim(id, 1)->commits_at_release, before + 1) << "released only once on record";
  EXPECT_THAT(kinds(id), ElementsAre("job.submitted", "job.started"));
  EXPECT_EQ(queue_->spare_gpus(), 0);
  // The pass that follows finds the start made: nothing more to write.
  world_->run();
  EXPECT_EQ(world_->commits(), before + 1);
  EXPECT_EQ(state(id), JobState::kRunning);
  ASSERT_EQ(job(id).runs.size(), 1u);
  end_run(id, 1, exited(0));
  EXPECT_EQ(state(id), JobState::kSucceeded);
}

TEST_F(QueueTest, ASubmitWhoseStartCannotBeRecordedLeavesNothingAndIsRefused) {
  start("fake:1");
  world_->fail_commits(1, "database or disk is full");
  auto submitted = queue_->submit(command("true"));
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().code, Code::kUnavailable);
  ASSERT_EQ(world_->shims().size(), 1u);
  EXPECT_TRUE(world_->shims()[0]->dropped) << "never released: its job never ran";
  EXPECT_FALSE(world_->shims()[0]->released);
  EXPECT_EQ(count("job.submitted"), 0) << "the submit was rolled back with its start";
  // Once the store works the GPU is free and the next submit starts at once.
  world_->advance(100);
  EXPECT_FALSE(queue_->store_trouble());
  EXPECT_EQ(queue_->spare_gpus(), 1) << "the refused start held nothing";
  int64_t id = submit(command("true"));
  EXPECT_EQ(state(id), JobState::kRunning);
  EXPECT_EQ(count("job.submitted"), 1);
}

// Writes kept for the next commit (a quiet cleanup's confirmation) that fail are kept again and
// the submit commits alone: its job starts once, on one GPU, and the kept writes land later.
TEST_F(QueueTest, KeptWritesThatFailDoNotHoldBackASubmitOrItsStart) {
  start("fake:2");
  int64_t first = submit(command("true"));
  end_run(first, 1, exited(0));  // its quiet cleanup's confirmation waits for the next commit
  auto db = store::Database::open((dir_ / "gpuq.db").string(), false);
  ASSERT_TRUE(db);
  ASSERT_TRUE((*db)->exec("CREATE TRIGGER refuse_cleanup BEFORE UPDATE OF cleanup ON runs "
                          "BEGIN SELECT RAISE(ABORT, 'injected'); END;"));
  ASSERT_EQ(store_->runs_in_cleanup(store::CleanupState::kPending)->size(), 1u);
  auto submitted = queue_->submit(command("true"));
  ASSERT_TRUE(submitted) << submitted.error().message;
  ASSERT_TRUE((*db)->exec("DROP TRIGGER refuse_cleanup"));
  EXPECT_EQ(store_->runs_in_cleanup(store::CleanupState::kPending)->size(), 1u) << "kept again";
  int64_t id = submitted->job.id;
  EXPECT_EQ(submitted->job.state, JobState::kRunning);
  EXPECT_EQ(count("job.submitted", id), 1);
  EXPECT_EQ(count("job.started", id), 1);
  int released = 0;
  for (const auto& shim : world_->shims()) released += shim->released;
  EXPECT_EQ(released, 2) << "the first job's shim and one of this job's";
  ASSERT_EQ(job(id).runs.size(), 1u);
  end_run(id, job(id).runs[0].number, exited(0));
  world_->advance(1'000);
  EXPECT_EQ(queue_->spare_gpus(), 2);
  EXPECT_TRUE(store_->runs_in_cleanup(store::CleanupState::kPending)->empty()) << "the kept writes landed";
}

TEST_F(QueueTest, ASubmitThatTheMachineCannotStartStaysPendingAndIsTriedAgain) {
  start("fake:1");
  world_->fail_launches(1);
  auto submitted = queue_->submit(command("true"));
  ASSERT_TRUE(submitted) << "the job is on record; only its start failed";
  int64_t id = submitted->job.id;
  EXPECT_EQ(submitted->job.state, JobState::kPending);
  EXPECT_EQ(count("job.start_failed", id), 1);
  world_->run();
  EXPECT_EQ(state(id), JobState::kPending) << "not before its backoff";
  // The refused start freed its GPU: a job submitted meanwhile takes it at once.
  auto other = queue_->submit(command("true"));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->job.state, JobState::kRunning);
  end_run(other->job.id, 1, exited(0));
  world_->advance(1'000);
  EXPECT_EQ(state(id), JobState::kRunning) << "tried again after its backoff";
}

TEST_F(QueueTest, ASubmitBehindAJobWaitingForGpusLeavesTheChoiceToThePass) {
  start("fake:2");
  int64_t running = submit(command("true"));
  JobSpec big = command("true");
  big.gpus = 2;
  int64_t waiting = submit(big);
  ASSERT_EQ(state(waiting), JobState::kPending);
  int before = world_->commits();
  size_t shims = world_->shims().size();
  auto submitted = queue_->submit(command("true"));
  ASSERT_TRUE(submitted);
  EXPECT_EQ(submitted->job.state, JobState::kPending) << "a ready job waits: the pass decides";
  EXPECT_EQ(world_->commits(), before + 1);
  EXPECT_EQ(world_->shims().size(), shims) << "no start was prepared by the submit";
  (void)running;
}

TEST_F(QueueTest, ASubmitWhileAPassIsDueLeavesTheChoiceToThatPass) {
  start("fake:2");
  // The first submit starts its job and asks for a pass (to publish); the second, in the
  // same turn, comes before that pass: the pass decides it, with everything else due.
  auto first = queue_->submit(command("true"));
  auto second = queue_->submit(command("true"));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->job.state, JobState::kRunning);
  EXPECT_EQ(second->job.state, JobState::kPending);
  world_->run();
  EXPECT_EQ(state(second->job.id), JobState::kRunning);
}

TEST_F(QueueTest, HeldDrainedOrDependentSubmitsDoNotStartAtOnce) {
  start("fake:2");
  JobSpec held = command("true");
  held.hold = true;
  int64_t h = submit(held);
  EXPECT_EQ(state(h), JobState::kHeld);
  int64_t first = submit(command("sleep 100"));
  JobSpec after = command("true");
  after.deps.push_back(Dependency{Dependency::Kind::kAfterOk, std::to_string(first), 0});
  auto dependent = queue_->submit(after);
  ASSERT_TRUE(dependent);
  EXPECT_EQ(dependent->job.state, JobState::kPending) << "it waits for job " << first;
  world_->run();
  EXPECT_EQ(state(dependent->job.id), JobState::kPending);
  ASSERT_TRUE(queue_->set_draining(true));
  world_->run();
  auto drained = queue_->submit(command("true"));
  ASSERT_TRUE(drained);
  EXPECT_EQ(drained->job.state, JobState::kPending) << "a drained daemon starts nothing";
  world_->run();
  EXPECT_EQ(state(drained->job.id), JobState::kPending);
}

}  // namespace
}  // namespace gpuq::daemon::testing
