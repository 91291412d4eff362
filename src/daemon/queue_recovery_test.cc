// SPDX-License-Identifier: Apache-2.0
// The queue actor across daemon restarts and reboots, through a FakeWorld.
#include <fmt/format.h>

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

// Daemons that die between recording a run's start and letting its shim go.
class NotStartedTest : public QueueTest {
 protected:
  // The daemon dies before letting run `run` of `job_id` go; the shim says so in its exit
  // record, and the next daemon starts.
  void die_before_letting_go(int64_t job_id, int run) {
    queue_->stop();
    queue_.reset();
    world_->exit_shim(run_dir(job_id, run), never_released());
    world_->run();
    start();
  }
};

TEST_F(NotStartedTest, ARunNeverLetGoBeforeACrashDidNotStartAndIsRequeued) {
  start();
  int64_t id = submit(command("true"));
  // Twice: a lost run is requeued only once, a run that never began up to [runs]
  // max_not_started times in a row.
  for (int run = 1; run <= 2; ++run) die_before_letting_go(id, run);
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

// A daemon that dies as it starts a job would start it forever: at [runs] max_not_started runs
// in a row that never began, the job is held with a reason that says what to do.
TEST_F(NotStartedTest, AJobIsHeldAtMaxNotStartedRunsInARow) {
  config_.max_not_started = 3;
  start();
  int64_t id = submit(command("true"));
  for (int run = 1; run <= 2; ++run) {
    die_before_letting_go(id, run);
    EXPECT_EQ(last_data("job.not_started", id),
              (nlohmann::json{{"requeued", true}, {"in_a_row", run}}));
    EXPECT_EQ(state(id), JobState::kRunning) << "requeued and started again after run " << run;
    EXPECT_EQ(job(id).runs.size(), static_cast<size_t>(run + 1));
  }
  die_before_letting_go(id, 3);
  const std::string why =
      "runs 1 to 3 never began, 3 in a row ([runs] max_not_started = 3): each time the daemon "
      "stopped after recording the start and before letting the job run";
  const std::string fix = fmt::format(
      "find out why the daemon stops as it starts this job (its log: journalctl --user -u gpuq, "
      "or $GPUQ_HOME/daemon.log), then: gpuq release {}",
      id);
  const std::string reason = why + "; held — " + fix;
  Job now = job(id);
  EXPECT_EQ(now.state, JobState::kHeld);
  EXPECT_EQ(now.reason, reason);
  ASSERT_EQ(now.runs.size(), 3u) << "no run after the third that never began";
  EXPECT_EQ(now.runs[2].outcome, RunOutcome::kNotStarted);
  EXPECT_EQ(count("job.not_started", id), 3);
  EXPECT_EQ(count("job.requeued", id), 2);
  EXPECT_EQ(last_data("job.not_started", id),
            (nlohmann::json{{"requeued", false}, {"in_a_row", 3}}));
  ASSERT_EQ(count("job.held", id), 1);
  EXPECT_EQ(last_data("job.held", id), (nlohmann::json{{"by", "daemon"},
                                                       {"outcome", "not-started"},
                                                       {"not_started_in_a_row", 3},
                                                       {"max_not_started", 3},
                                                       {"why", why},
                                                       {"fix", fix}}));
  EXPECT_EQ(queue_->waits()->reason(id, world_->now()), reason);
  // The hold and its reason outlive the next restart.
  restart();
  EXPECT_EQ(state(id), JobState::kHeld);
  EXPECT_EQ(job(id).runs.size(), 3u);
  EXPECT_EQ(queue_->waits()->reason(id, world_->now()), reason);
  // A person releases it: it runs.
  ASSERT_TRUE(queue_->release(id));
  world_->run();
  EXPECT_EQ(state(id), JobState::kRunning);
  end_run(id, 4, exited(0));
  EXPECT_EQ(state(id), JobState::kSucceeded);
}

// Only runs in a row count: a run that began in between starts the count again.
TEST_F(NotStartedTest, ARunThatBeganInBetweenStartsTheCountAgain) {
  config_.max_not_started = 3;
  config_.retry_delay_ms = 1'000;
  start();
  JobSpec spec = command("false");
  spec.retries = 1;
  int64_t id = submit(spec);
  die_before_letting_go(id, 1);
  die_before_letting_go(id, 2);
  EXPECT_EQ(last_data("job.not_started", id)["in_a_row"], 2);
  end_run(id, 3, exited(1));  // it began, and failed: retried after a second
  world_->advance(1'000);
  EXPECT_EQ(state(id), JobState::kRunning);
  for (int run = 4; run <= 5; ++run) {
    die_before_letting_go(id, run);
    EXPECT_EQ(last_data("job.not_started", id),
              (nlohmann::json{{"requeued", true}, {"in_a_row", run - 3}}));
    EXPECT_EQ(state(id), JobState::kRunning);
  }
  die_before_letting_go(id, 6);
  EXPECT_EQ(state(id), JobState::kHeld);
  EXPECT_EQ(last_data("job.held", id)["not_started_in_a_row"], 3);
  EXPECT_EQ(job(id).reason.rfind("runs 4 to 6 never began, 3 in a row", 0), 0u) << job(id).reason;
  EXPECT_EQ(job(id).runs.size(), 6u);
}

TEST(NotStartedDecision, CountsOnlyTheRunsJustBeforeThatNeverBegan) {
  auto runs = [](std::initializer_list<RunOutcome> outcomes) {
    std::vector<gpuq::Run> out;
    for (RunOutcome outcome : outcomes) {
      gpuq::Run run;
      run.number = static_cast<int>(out.size()) + 1;
      run.outcome = outcome;
      out.push_back(run);
    }
    return out;
  };
  constexpr auto kNot = RunOutcome::kNotStarted;
  EXPECT_EQ(not_started_before({}, 1), 0);
  EXPECT_EQ(not_started_before(runs({kNot, kNot, RunOutcome::kRunning}), 3), 2);
  EXPECT_EQ(
      not_started_before(runs({kNot, RunOutcome::kLost, kNot, kNot, RunOutcome::kRunning}), 5), 2);
  EXPECT_EQ(not_started_before(runs({kNot, RunOutcome::kFailed, RunOutcome::kRunning}), 3), 0);
}

TEST(NotStartedDecision, OneAllowedHoldsAtTheFirstAndACancelWins) {
  gpuq::Run run;
  run.job_id = 9;
  run.number = 4;
  LostRun held = decide_unstarted_run(run, 0, 1);
  EXPECT_EQ(held.to, JobState::kHeld);
  EXPECT_FALSE(held.requeue);
  EXPECT_EQ(held.why.rfind("run 4 never began, 1 in a row ([runs] max_not_started = 1)", 0), 0u)
      << held.why;
  run.stop_reason = StopReason::kCancel;
  LostRun cancelled = decide_unstarted_run(run, 5, 3);
  EXPECT_EQ(cancelled.to, JobState::kCancelled);
  EXPECT_FALSE(cancelled.requeue);
}

// A job that yielded resumes from its checkpoint even when the run after the yield never
// began: a not-started run is not the run the next one follows.
TEST_F(NotStartedTest, AYieldedJobStillResumesAfterARunThatNeverBegan) {
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
  die_before_letting_go(id, 2);
  Job now = job(id);
  ASSERT_EQ(now.runs.size(), 3u);
  EXPECT_EQ(now.runs[1].outcome, RunOutcome::kNotStarted);
  EXPECT_EQ(world_->run_specs().at(run_dir(id, 3)).env.at("GPUQ_RESUME"), "1");
  EXPECT_EQ(last_data("job.resumed")["after_run"], 1);
}

TEST_F(NotStartedTest, ACancelledRunThatNeverBeganEndsTheJobCancelled) {
  start();
  int64_t id = submit(command("sleep 100"));
  ASSERT_TRUE(queue_->cancel(id));
  world_->run();
  die_before_letting_go(id, 1);
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
  EXPECT_EQ(pending->size(), 1u) << "kept a while for a commit to ride in";
  world_->advance(1'000);
  pending = store_->runs_in_cleanup(store::CleanupState::kPending);
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
