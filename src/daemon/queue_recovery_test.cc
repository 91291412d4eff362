// The queue actor across daemon restarts and reboots, through a FakeWorld.
#include <csignal>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

TEST_F(QueueTest, ARestartAdoptsARunWhoseShimStillRuns) {
  start();
  int64_t id = submit(command("sleep 100"));
  restart();
  EXPECT_EQ(count("job.adopted", id), 1);
  EXPECT_EQ(state(id), JobState::kRunning);
  end_run(id, 1, exited(0));
  EXPECT_EQ(state(id), JobState::kSucceeded);
  EXPECT_EQ(job(id).runs.size(), 1u);
}

TEST_F(QueueTest, ARunThatEndedWhileTheDaemonWasDownIsSettledFromItsRecord) {
  start();
  int64_t id = submit(command("true"));
  queue_->stop();
  queue_.reset();
  world_->exit_shim(run_dir(id, 1), exited(0));
  world_->run();
  start();
  EXPECT_EQ(state(id), JobState::kSucceeded);
  EXPECT_EQ(last_data("job.succeeded")["while_daemon_down"], true);
  EXPECT_EQ(count("job.lost"), 0);
}

TEST_F(QueueTest, AShimThatVanishedWhileTheDaemonWasDownIsLostAndItsSessionSwept) {
  start();
  int64_t id = submit(command("true"));
  pid_t pid = shim(id, 1)->pid;
  queue_->stop();
  queue_.reset();
  world_->vanish_shim(run_dir(id, 1));
  world_->run();
  start();
  Job now = job(id);
  ASSERT_EQ(now.runs.size(), 2u);
  EXPECT_EQ(now.runs[0].outcome, RunOutcome::kLost);
  ASSERT_EQ(world_->swept_sessions().size(), 1u);
  EXPECT_EQ(world_->swept_sessions()[0].first, pid);
}

TEST_F(QueueTest, RunsOfAnEarlierBootAreLostAtOnceWhateverTheirPidsSay) {
  start();
  int64_t id = submit(command("sleep 100"));
  // A reboot: the same pid and start time may belong to an unrelated process now (the fake
  // shim stays "alive" to stand for one).
  boot_id_ = "boot-b";
  restart();
  EXPECT_EQ(count("job.adopted", id), 0);
  Job now = job(id);
  ASSERT_GE(now.runs.size(), 1u);
  EXPECT_EQ(now.runs[0].outcome, RunOutcome::kLost);
  EXPECT_TRUE(world_->swept_sessions().empty()) << "its session id may be anyone's after a reboot";
  EXPECT_TRUE(shim(id, 1)->signals.empty());
  ASSERT_EQ(now.runs.size(), 2u) << "requeued by the rules (first lost run)";
  EXPECT_EQ(now.runs[1].boot_id, "boot-b");
}

TEST_F(QueueTest, ARunEndedBeforeARebootIsSettledByItsRecord) {
  start();
  int64_t id = submit(command("true"));
  world_->put_exit_record(run_dir(id, 1), exited(0));
  boot_id_ = "boot-b";
  restart();
  EXPECT_EQ(state(id), JobState::kSucceeded);
  EXPECT_EQ(count("job.lost"), 0);
}

TEST_F(QueueTest, AnEndNotRecordedBeforeAStopIsRecordedAfterTheRestart) {
  start();
  int64_t id = submit(command("true"));
  world_->fail_commits(1000);
  end_run(id, 1, exited(0));
  EXPECT_EQ(state(id), JobState::kRunning);
  world_->fail_commits(0);
  restart();
  EXPECT_EQ(state(id), JobState::kSucceeded);
  EXPECT_EQ(job(id).runs.size(), 1u);
  EXPECT_EQ(count("job.lost"), 0);
}

// What a shim writes when its daemon died after recording the start but before letting it go:
// the job never ran.
runner::ExitRecord never_released() {
  runner::ExitRecord r;
  r.released = false;
  r.error = "the daemon stopped before it let the run begin";
  return r;
}

TEST_F(QueueTest, ARunNeverLetGoBeforeACrashDidNotStartAndIsRequeuedEveryTime) {
  start();
  int64_t id = submit(command("true"));
  // Twice: a lost run is requeued only once, a run that never began as often as it happens.
  for (int run = 1; run <= 2; ++run) {
    queue_->stop();
    queue_.reset();
    world_->exit_shim(run_dir(id, run), never_released());
    world_->run();
    start();
  }
  Job now = job(id);
  ASSERT_EQ(now.runs.size(), 3u);
  EXPECT_EQ(now.runs[0].outcome, RunOutcome::kNotStarted);
  EXPECT_EQ(now.runs[1].outcome, RunOutcome::kNotStarted);
  EXPECT_EQ(now.lost_count, 0);
  EXPECT_EQ(count("job.lost"), 0);
  EXPECT_EQ(count("job.not_started", id), 2);
  EXPECT_EQ(last_data("job.not_started")["requeued"], true);
  EXPECT_TRUE(world_->swept_sessions().empty()) << "nothing of a run that never began to sweep";
  EXPECT_EQ(state(id), JobState::kRunning);
  end_run(id, 3, exited(0));
  EXPECT_EQ(state(id), JobState::kSucceeded);
}

// A job that yielded resumes from its checkpoint even when the run after the yield never
// began: a not-started run is not the run the next one follows.
TEST_F(QueueTest, AYieldedJobStillResumesAfterARunThatNeverBegan) {
  start();
  JobSpec spec = command("train");
  spec.preempt = PreemptMode::kYield;
  int64_t id = submit(spec);
  queue_->stop();
  queue_.reset();
  // Run 1 yielded (as its record says) and the job went back to the queue.
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto st = store_->finish_run(job(id).runs[0].id, 5, 75, std::nullopt, RunOutcome::kPreempted);
    if (!st) return st;
    return store_->set_job_state(id, JobState::kPending, "", std::nullopt);
  }));
  world_->vanish_shim(run_dir(id, 1));
  world_->run();
  start();  // run 2 starts; the daemon dies before letting it go
  ASSERT_EQ(job(id).runs.size(), 2u);
  queue_->stop();
  queue_.reset();
  world_->exit_shim(run_dir(id, 2), never_released());
  world_->run();
  start();
  Job now = job(id);
  ASSERT_EQ(now.runs.size(), 3u);
  EXPECT_EQ(now.runs[1].outcome, RunOutcome::kNotStarted);
  EXPECT_EQ(world_->run_specs().at(run_dir(id, 3)).env.at("GPUQ_RESUME"), "1");
  EXPECT_EQ(last_data("job.resumed")["after_run"], 1);
}

TEST_F(QueueTest, ACancelledRunThatNeverBeganEndsTheJobCancelled) {
  start();
  int64_t id = submit(command("sleep 100"));
  ASSERT_TRUE(queue_->cancel(id));
  world_->run();
  queue_->stop();
  queue_.reset();
  world_->exit_shim(run_dir(id, 1), never_released());
  world_->run();
  start();
  Job now = job(id);
  ASSERT_EQ(now.runs.size(), 1u);
  EXPECT_EQ(now.runs[0].outcome, RunOutcome::kNotStarted);
  EXPECT_EQ(now.state, JobState::kCancelled);
  EXPECT_EQ(last_data("job.not_started")["requeued"], false);
}

// Confirms the oldest cleanup asked for (clean: nothing was left of the run).
void confirm_oldest_cleanup(FakeWorld& world) {
  ASSERT_FALSE(world.cleanup_calls().empty());
  auto call = std::move(world.cleanup_calls().front());
  world.cleanup_calls().pop_front();
  runner::CleanupOutcome outcome;
  outcome.key = call.target.key;
  outcome.confirmed = true;
  call.done(outcome);
}

TEST_F(QueueTest, AQuietCleanupIsRecordedInTheCommitOfTheStartThatTakesItsGpu) {
  world_->set_auto_clean(false);
  start("fake:1");
  int64_t first = submit(command("true"));
  int64_t second = submit(command("true"));
  end_run(first, 1, exited(0));
  int commits_before = world_->commits();
  confirm_oldest_cleanup(*world_);
  world_->run();
  EXPECT_EQ(state(second), JobState::kRunning);
  EXPECT_EQ(world_->commits() - commits_before, 1) << "one transaction: the start, with the cleanup";
  auto pending = store_->runs_in_cleanup(store::CleanupState::kPending);
  ASSERT_TRUE(pending);
  EXPECT_TRUE(pending->empty()) << "the first run's cleanup is on record";
}

TEST_F(QueueTest, AQuietCleanupWithNoStartToRideInIsCommittedAlone) {
  world_->set_auto_clean(false);
  start("fake:1");
  int64_t id = submit(command("true"));
  end_run(id, 1, exited(0));
  confirm_oldest_cleanup(*world_);
  world_->run();
  auto pending = store_->runs_in_cleanup(store::CleanupState::kPending);
  ASSERT_TRUE(pending);
  EXPECT_TRUE(pending->empty());
  EXPECT_EQ(count("job.cleanup"), 0) << "a clean end has no event";
}

TEST_F(QueueTest, AQuietCleanupNotOnRecordAtAStopIsSweptAgainBeforeItsGpuServes) {
  world_->set_auto_clean(false);
  start("fake:1");
  int64_t first = submit(command("true"));
  end_run(first, 1, exited(0));
  // Its confirmation is never recorded, as in a crash: every commit fails until the restart.
  world_->fail_commits(1000);
  confirm_oldest_cleanup(*world_);
  world_->run();
  queue_->stop();
  queue_.reset();
  world_->run();
  world_->fail_commits(0);
  start("fake:1");
  int64_t second = submit(command("true"));
  EXPECT_EQ(state(second), JobState::kPending) << "the GPU waits for the sweep again";
  ASSERT_EQ(world_->cleanup_calls().size(), 1u);
  confirm_oldest_cleanup(*world_);
  world_->run();
  EXPECT_EQ(state(second), JobState::kRunning);
}

}  // namespace
}  // namespace gpuq::daemon::testing
