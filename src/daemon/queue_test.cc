// SPDX-License-Identifier: Apache-2.0
// The queue actor through a FakeWorld: every step driven explicitly, every check exact.
#include <gmock/gmock.h>

#include <csignal>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

using ::testing::ElementsAre;

// The kinds of job events (job.*) among `kinds`, in their order.
std::vector<std::string> only_jobs(std::vector<std::string> kinds) {
  std::erase_if(kinds, [](const std::string& k) { return k.rfind("job.", 0) != 0; });
  return kinds;
}

TEST_F(QueueTest, SubmitPassStartExitAndEvents) {
  start();
  int64_t id = submit(command("true"));
  Job started = job(id);
  EXPECT_EQ(started.state, JobState::kRunning);
  ASSERT_EQ(started.runs.size(), 1u);
  EXPECT_EQ(started.runs[0].boot_id, "boot-a");
  ASSERT_NE(shim(id, 1), nullptr);
  EXPECT_TRUE(shim(id, 1)->released) << "the job may run only once the run is on record";
  EXPECT_EQ(world_->run_specs().at(run_dir(id, 1)).cwd, "/tmp");

  end_run(id, 1, exited(0));
  Job done = job(id);
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_EQ(done.runs[0].outcome, RunOutcome::kSucceeded);
  EXPECT_THAT(kinds(id), ElementsAre("job.submitted", "job.started", "job.succeeded"));
  EXPECT_FALSE(queue_->store_trouble());
}

TEST_F(QueueTest, AGpuServesAgainOnlyOnceItsCleanupIsConfirmed) {
  world_->set_auto_clean(false);
  start("fake:1");
  int64_t first = submit(command("true"));
  int64_t second = submit(command("true"));
  EXPECT_EQ(state(second), JobState::kPending);
  end_run(first, 1, exited(0));
  EXPECT_EQ(state(first), JobState::kSucceeded);
  EXPECT_EQ(state(second), JobState::kPending) << "the GPU is still being cleaned";
  ASSERT_EQ(world_->cleanup_calls().size(), 1u);
  runner::CleanupOutcome outcome;
  outcome.confirmed = true;
  world_->answer_cleanup(outcome);
  world_->run();
  EXPECT_EQ(state(second), JobState::kRunning);
}

TEST_F(QueueTest, AFailedRunIsRetriedExactlyAfterItsDelay) {
  config_.retry_delay_ms = 10'000;
  start();
  JobSpec spec = command("false");
  spec.retries = 1;
  int64_t id = submit(spec);
  end_run(id, 1, exited(3));
  EXPECT_EQ(state(id), JobState::kPending);
  EXPECT_EQ(job(id).retry_at_ms, world_->now() + 10'000);
  world_->advance(9'999);
  EXPECT_EQ(job(id).runs.size(), 1u) << "one ms before the delay ends, nothing starts";
  world_->advance(1);
  EXPECT_EQ(state(id), JobState::kRunning);
  end_run(id, 2, exited(3));
  EXPECT_EQ(state(id), JobState::kFailed) << "the retry budget is spent";
  EXPECT_EQ(count("job.retrying", id), 1);
}

// [retries]: the first delay, then times the backoff after each further failure, up to the cap.
// A factor of 3 and a cap between two steps pin the formula: the factor applied once too often
// or too few times, a fixed doubling, or the cap ignored, each give another delay somewhere.
TEST_F(QueueTest, RetryDelaysGrowByTheBackoffUpToTheCap) {
  config_.retry_delay_ms = 1'000;
  config_.retry_backoff = 3.0;
  config_.retry_max_delay_ms = 20'000;
  start();
  JobSpec spec = command("false");
  spec.retries = 5;
  int64_t id = submit(spec);
  const std::vector<int64_t> delays = {1'000, 3'000, 9'000, 20'000, 20'000};  // not 27'000, 81'000
  for (int failed = 1; failed <= 5; ++failed) {
    const int64_t delay = delays[failed - 1];
    end_run(id, failed, exited(1));
    ASSERT_EQ(state(id), JobState::kPending) << "after failure " << failed;
    EXPECT_EQ(job(id).retry_at_ms, world_->now() + delay) << "after failure " << failed;
    nlohmann::json retrying = last_data("job.retrying", id);
    EXPECT_EQ(retrying["attempt"], failed);
    EXPECT_EQ(retrying["delay_ms"], delay) << "after failure " << failed;
    world_->advance(delay - 1);
    EXPECT_EQ(job(id).runs.size(), static_cast<size_t>(failed))
        << "a ms early, after failure " << failed;
    world_->advance(1);
    ASSERT_EQ(state(id), JobState::kRunning) << "on time, after failure " << failed;
  }
  end_run(id, 6, exited(1));
  EXPECT_EQ(state(id), JobState::kFailed) << "five retries spent";
  EXPECT_EQ(count("job.retrying", id), 5);
}

TEST_F(QueueTest, ATimeoutStopsTheRunThroughItsShimAtTheLimit) {
  start();
  JobSpec spec = command("sleep 100");
  spec.timeout_ms = 5'000;
  int64_t id = submit(spec);
  world_->advance(4'999);
  EXPECT_TRUE(shim(id, 1)->signals.empty());
  world_->advance(1);
  EXPECT_THAT(shim(id, 1)->signals, ElementsAre(SIGTERM));
  EXPECT_EQ(job(id).runs[0].stop_reason, StopReason::kTimeout);
  end_run(id, 1, stopped_by_signal(SIGTERM));
  EXPECT_EQ(job(id).runs[0].outcome, RunOutcome::kTimedOut);
  EXPECT_EQ(state(id), JobState::kFailed);
}

TEST_F(QueueTest, TheLongestTimeoutFiresNeitherEarlyNorLate) {
  constexpr int64_t kYear = 365LL * 24 * 3600 * 1000;
  config_.watch.interval_ms = kYear / 50;  // a year of looks every 10 s is a slow test
  config_.watch.heartbeat_ms = kYear / 50;
  start();
  JobSpec spec = command("sleep 100");
  spec.timeout_ms = kYear;
  int64_t id = submit(spec);
  world_->advance(kYear - 1);
  EXPECT_TRUE(shim(id, 1)->signals.empty());
  EXPECT_EQ(state(id), JobState::kRunning);
  world_->advance(1);
  EXPECT_EQ(shim(id, 1)->signals, std::vector<int>{SIGTERM});
}

TEST_F(QueueTest, AFarNotBeforeWaitsWithoutSpinning) {
  config_.watch.interval_ms = 600'000;
  start();
  JobSpec spec = command("true");
  spec.not_before_ms = 13'569'465'600'000;  // 2400-01-01
  int64_t id = submit(spec);
  int64_t passes = queue_->waits()->pass;
  world_->advance(3'600'000);
  EXPECT_EQ(state(id), JobState::kPending);
  EXPECT_EQ(queue_->waits()->pass, passes) << "an hour later, no pass was needed";
  EXPECT_NE(queue_->waits()->reason(id, world_->now()).find("not before"), std::string::npos);
}

TEST_F(QueueTest, AStartThatCannotBeRecordedDropsItsShimAndKeepsTheJob) {
  start();
  // The job waits (drained); the undrain's commit works, the start's, in the pass that
  // follows, fails.
  ASSERT_TRUE(queue_->set_draining(true));
  int64_t id = submit(command("true"));
  world_->fail_commits(1, "database or disk is full", /*after=*/1);
  ASSERT_TRUE(queue_->set_draining(false));
  world_->run();
  ASSERT_EQ(world_->shims().size(), 1u);
  EXPECT_TRUE(world_->shims()[0]->dropped) << "never released: its job never ran";
  EXPECT_FALSE(world_->shims()[0]->released);
  EXPECT_EQ(state(id), JobState::kPending);
  EXPECT_TRUE(job(id).runs.empty());
  ASSERT_TRUE(queue_->store_trouble());
  EXPECT_EQ(queue_->store_trouble()->failures, 1);
  // The retry timer tries again: the store works, the job starts — in a new run directory.
  world_->advance(100);
  EXPECT_FALSE(queue_->store_trouble());
  Job now = job(id);
  EXPECT_EQ(now.state, JobState::kRunning);
  ASSERT_EQ(now.runs.size(), 1u);
  EXPECT_EQ(now.runs[0].number, 2) << "run-1 holds the aborted start's files";
  EXPECT_EQ(count("daemon.store_error"), 1);
  EXPECT_EQ(last_data("daemon.store_error")["failed_commits"], 1);
  EXPECT_EQ(last_data("daemon.store_error")["error"], "database or disk is full");
}

TEST_F(QueueTest, ARunEndThatCannotBeRecordedIsKeptAndRecordedLater) {
  start();
  int64_t id = submit(command("true"));
  world_->fail_commits(1000);
  end_run(id, 1, exited(0));
  EXPECT_EQ(state(id), JobState::kRunning) << "memory and store agree: not recorded, still running";
  int commits = world_->commits();
  world_->advance(10'000);
  // Backoff: 100, 200, 400, ... ms — a handful of tries in 10 s, not a hot loop.
  EXPECT_LE(world_->commits() - commits, 12);
  EXPECT_GE(world_->commits() - commits, 5);
  EXPECT_EQ(state(id), JobState::kRunning);
  ASSERT_TRUE(queue_->store_trouble());
  world_->fail_commits(0);
  world_->advance(10'000);
  Job done = job(id);
  EXPECT_EQ(done.state, JobState::kSucceeded);
  ASSERT_EQ(done.runs.size(), 1u);
  EXPECT_EQ(done.runs[0].outcome, RunOutcome::kSucceeded);
  EXPECT_EQ(count("job.lost"), 0);
  EXPECT_EQ(count("daemon.store_error"), 1);
  EXPECT_FALSE(queue_->store_trouble());
}

TEST_F(QueueTest, NothingStartsWhileTheStoreFails) {
  start("fake:1");
  int64_t first = submit(command("true"));
  int64_t second = submit(command("true"));
  world_->fail_commits(1000);
  end_run(first, 1, exited(0));
  world_->advance(5'000);
  EXPECT_EQ(world_->shims().size(), 1u) << "no shim launched for the waiting job";
  world_->fail_commits(0);
  world_->advance(10'000);
  EXPECT_EQ(state(first), JobState::kSucceeded);
  EXPECT_EQ(state(second), JobState::kRunning);
}

TEST_F(QueueTest, CancelOfARunningJobWorksWhileTheStoreFails) {
  start();
  int64_t id = submit(command("sleep 100"));
  world_->fail_commits(1000);
  auto cancelled = queue_->cancel(id);
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_FALSE(cancelled->recorded);
  EXPECT_THAT(shim(id, 1)->signals, ElementsAre(SIGTERM)) << "the stop does not wait for the store";
  end_run(id, 1, stopped_by_signal(SIGTERM));
  EXPECT_EQ(state(id), JobState::kRunning);
  world_->fail_commits(0);
  world_->advance(10'000);
  Job done = job(id);
  EXPECT_EQ(done.state, JobState::kCancelled);
  EXPECT_EQ(done.runs[0].outcome, RunOutcome::kCancelled);
  EXPECT_EQ(done.runs[0].stop_reason, StopReason::kCancel);
}

TEST_F(QueueTest, CancelOfAWaitingJobWorksWhileTheStoreFails) {
  start("fake:1");
  int64_t busy = submit(command("sleep 100"));
  int64_t waiting = submit(command("true"));
  world_->fail_commits(1000);
  auto cancelled = queue_->cancel(waiting);
  ASSERT_TRUE(cancelled);
  EXPECT_FALSE(cancelled->recorded);
  world_->run();
  EXPECT_EQ(queue_->waits()->reason(waiting, world_->now()).substr(0, 9), "cancelled");
  world_->fail_commits(0);
  end_run(busy, 1, exited(0));
  world_->advance(10'000);
  EXPECT_EQ(state(waiting), JobState::kCancelled);
  EXPECT_TRUE(job(waiting).runs.empty()) << "it never started";
}

TEST_F(QueueTest, ACancelAfterTheRunEndedButBeforeItWasRecordedWins) {
  start();
  JobSpec spec = command("false");
  spec.retries = 3;
  int64_t id = submit(spec);
  world_->fail_commits(1000);
  end_run(id, 1, exited(1));
  ASSERT_TRUE(queue_->cancel(id));
  world_->fail_commits(0);
  world_->advance(10'000);
  EXPECT_EQ(state(id), JobState::kCancelled) << "not retried";
  EXPECT_EQ(job(id).runs.size(), 1u);
}

TEST_F(QueueTest, APersonsChangeThatCannotBeRecordedIsRefusedWithNothingChanged) {
  start();
  world_->fail_commits(1);
  auto submitted = queue_->submit(command("true"));
  ASSERT_FALSE(submitted);
  EXPECT_EQ(submitted.error().code, Code::kUnavailable);
  EXPECT_NE(submitted.error().message.find("nothing was changed"), std::string::npos);
  world_->run();
  auto jobs = store_->list_jobs(false, false);
  ASSERT_TRUE(jobs);
  EXPECT_TRUE(jobs->empty());
  EXPECT_EQ(queue_->waits()->active_jobs, 0u);
}

TEST_F(QueueTest, AnUnreadableExitRecordNeverMakesARunLost) {
  start();
  int64_t id = submit(command("true"));
  world_->set_exit_records_unreadable(true);
  end_run(id, 1, exited(0));
  world_->advance(1'000);
  EXPECT_EQ(state(id), JobState::kRunning);
  world_->set_exit_records_unreadable(false);
  world_->advance(10'000);
  EXPECT_EQ(state(id), JobState::kSucceeded);
  EXPECT_EQ(count("job.lost"), 0);
}

TEST_F(QueueTest, AShimThatVanishesWithoutARecordIsLostAndRequeuedOnce) {
  start();
  int64_t id = submit(command("true"));
  world_->vanish_shim(run_dir(id, 1));
  world_->run();
  Job lost = job(id);
  ASSERT_EQ(lost.runs.size(), 2u) << "requeued and started again";
  EXPECT_EQ(lost.runs[0].outcome, RunOutcome::kLost);
  EXPECT_EQ(lost.state, JobState::kRunning);
  ASSERT_EQ(world_->swept_sessions().size(), 1u);
  EXPECT_EQ(world_->swept_sessions()[0].first, shim(id, 1)->pid);
  world_->vanish_shim(run_dir(id, 2));
  world_->run();
  EXPECT_EQ(state(id), JobState::kFailed) << "a second lost run is not requeued";
}

TEST_F(QueueTest, AStartTheMachineRefusesIsTriedAgainWithBackoff) {
  start();
  world_->fail_launches(2);
  int64_t id = submit(command("true"));
  EXPECT_EQ(state(id), JobState::kPending);
  EXPECT_EQ(count("job.start_failed", id), 1);
  EXPECT_NE(queue_->waits()->reason(id, world_->now()).find("could not start"), std::string::npos);
  world_->advance(999);
  EXPECT_EQ(count("job.start_failed", id), 1);
  world_->advance(1);
  EXPECT_EQ(count("job.start_failed", id), 2) << "second try after 1 s";
  world_->advance(1'999);
  EXPECT_EQ(state(id), JobState::kPending);
  world_->advance(1);
  Job started = job(id);
  EXPECT_EQ(started.state, JobState::kRunning) << "third try after 2 s more";
  EXPECT_EQ(started.runs[0].number, 3) << "run directories of the failed starts are not reused";
}

TEST_F(QueueTest, DoneIfIsCheckedAgainBeforeAStartAfterALongWait) {
  config_.requires_poll_ms = 5'000;
  start("fake:1");
  int64_t busy = submit(command("sleep 100"));
  JobSpec spec = command("train");
  spec.done_if = "test -s out.json";
  int64_t id = submit(spec);
  ASSERT_TRUE(world_->answer_conditions(id, /*holds=*/true, /*done=*/false));
  world_->run();
  EXPECT_EQ(state(id), JobState::kPending);
  world_->advance(60'000);
  end_run(busy, 1, exited(0));
  EXPECT_EQ(state(id), JobState::kPending) << "a check a minute old is not trusted";
  ASSERT_EQ(world_->condition_calls().size(), 1u);
  EXPECT_EQ(world_->condition_calls().front().request.done_if, "test -s out.json");
  ASSERT_TRUE(world_->answer_conditions(id, true, /*done=*/true));
  world_->run();
  EXPECT_EQ(state(id), JobState::kSkipped);
  EXPECT_TRUE(job(id).runs.empty());
}

TEST_F(QueueTest, AFreshConditionCheckStartsTheJobAtOnce) {
  config_.requires_poll_ms = 5'000;
  start();
  JobSpec spec = command("train");
  spec.done_if = "test -s out.json";
  int64_t id = submit(spec);
  ASSERT_TRUE(world_->answer_conditions(id, true, false));
  world_->run();
  EXPECT_EQ(state(id), JobState::kRunning);
  EXPECT_TRUE(world_->condition_calls().empty());
}

// A retry answers once the jobs it blocked wait again, down a chain: a `gpuq wait` right after
// it must not find them still blocked (which counts as finished) and return at once.
TEST_F(QueueTest, ARetryUnblocksTheChainItBlockedBeforeItAnswers) {
  start("fake:1");
  int64_t a = submit(command("false"));
  JobSpec b_spec = command("true");
  b_spec.deps.push_back({Dependency::Kind::kAfterOk, std::to_string(a), a});
  int64_t b = submit(b_spec);
  JobSpec c_spec = command("true");
  c_spec.deps.push_back({Dependency::Kind::kAfterOk, std::to_string(b), b});
  int64_t c = submit(c_spec);
  end_run(a, 1, exited(1));
  ASSERT_EQ(state(b), JobState::kBlocked);
  ASSERT_EQ(state(c), JobState::kBlocked);
  ASSERT_TRUE(queue_->retry(a));
  EXPECT_EQ(state(b), JobState::kPending) << "before any pass ran";
  EXPECT_EQ(state(c), JobState::kPending);
  world_->run();
  EXPECT_EQ(state(a), JobState::kRunning);
}

TEST_F(QueueTest, ABlockThatCannotBeRecordedIsNotRetriedInAHotLoop) {
  start();
  int64_t parent = submit(command("false"));
  JobSpec child = command("true");
  child.deps.push_back({Dependency::Kind::kAfterOk, std::to_string(parent), parent});
  int64_t id = submit(child);
  // The parent's end is recorded; the child's block (and the cleanup's record) are not.
  world_->fail_commits(1000, "disk I/O error", /*after=*/1);
  end_run(parent, 1, exited(1));
  EXPECT_EQ(state(parent), JobState::kFailed);
  EXPECT_EQ(state(id), JobState::kPending);
  int commits = world_->commits();
  world_->advance(1'000);
  EXPECT_LE(world_->commits() - commits, 10) << "retried with backoff, not in a loop";
  world_->fail_commits(0);
  world_->advance(10'000);
  EXPECT_EQ(state(parent), JobState::kFailed);
  EXPECT_EQ(state(id), JobState::kBlocked);
}

// The room a fleet agent may fill (docs/fleet.md): no GPU a run holds, none being cleaned,
// and none that a waiting job asks for.
TEST_F(QueueTest, SpareGpusAreThoseNoRunHoldsNoCleanupKeepsAndNoWaitingJobWants) {
  world_->set_auto_clean(false);
  start("fake:2");
  EXPECT_EQ(queue_->spare_gpus(), 2);
  int64_t first = submit(command("true"));
  EXPECT_EQ(state(first), JobState::kRunning);
  EXPECT_EQ(queue_->spare_gpus(), 1);
  int64_t wide = submit(command("true", 2));
  EXPECT_EQ(state(wide), JobState::kPending);
  EXPECT_EQ(queue_->spare_gpus(), 0) << "the waiting job wants both";
  ASSERT_TRUE(queue_->cancel(wide));
  EXPECT_EQ(queue_->spare_gpus(), 1);
  end_run(first, 1, exited(0));
  EXPECT_EQ(queue_->spare_gpus(), 1) << "its GPU is being cleaned";
  ASSERT_TRUE(queue_->set_draining(true));
  EXPECT_EQ(queue_->spare_gpus(), 0) << "a drained daemon starts nothing";
}

TEST_F(QueueTest, AnEventTheFleetAgentSawIsRecordedForItsJob) {
  start();
  int64_t id = submit(command("true"));
  ASSERT_TRUE(queue_->record_event("job.claimed", id, {{"fleet_id", "mx5a8rtnhp66s"}, {"attempt", 1}}));
  EXPECT_THAT(kinds(id), ElementsAre("job.submitted", "job.started", "job.claimed"));
}

TEST_F(QueueTest, StartsOfOnePassAreRecordedInOneCommitBeforeAnyRelease) {
  start("fake:2");
  // Both jobs wait (drained) for the pass that the undrain asks for.
  ASSERT_TRUE(queue_->set_draining(true));
  auto a = queue_->submit(command("true"));
  auto b = queue_->submit(command("true"));
  ASSERT_TRUE(a && b);
  world_->run();
  ASSERT_TRUE(queue_->set_draining(false));
  int commits_before_pass = world_->commits();
  world_->run();
  EXPECT_EQ(world_->commits(), commits_before_pass + 1) << "one transaction for both starts";
  for (int64_t id : {a->job.id, b->job.id}) {
    EXPECT_EQ(state(id), JobState::kRunning);
    ASSERT_NE(shim(id, 1), nullptr);
    EXPECT_TRUE(shim(id, 1)->released);
    EXPECT_EQ(shim(id, 1)->commits_at_release, commits_before_pass + 1)
        << "released only after the commit that recorded it";
  }
  // The events of the batch, both on record, one for each job.
  EXPECT_THAT(only_jobs(kinds()), ElementsAre("job.submitted", "job.submitted", "job.started", "job.started"));
  EXPECT_EQ(count("job.started", a->job.id), 1);
  EXPECT_EQ(count("job.started", b->job.id), 1);
}

TEST_F(QueueTest, AFailedBatchOfStartsLeavesNothingAndEachStartIsTriedAlone) {
  start("fake:2");
  ASSERT_TRUE(queue_->set_draining(true));
  auto a = queue_->submit(command("true"));
  auto b = queue_->submit(command("true"));
  ASSERT_TRUE(a && b);
  world_->run();
  ASSERT_TRUE(queue_->set_draining(false));
  // The batch's commit fails after its writes ran (rolled back), then the first start alone
  // fails too; the second alone works.
  world_->fail_commits(2);
  world_->run();
  // The first start tried alone was dropped; the store working again (the second start's
  // commit) retries it at once, in a new run directory.
  bool a_dropped = shim(a->job.id, 1)->dropped;
  int64_t failed = a_dropped ? a->job.id : b->job.id;
  int64_t other = a_dropped ? b->job.id : a->job.id;
  EXPECT_TRUE(shim(failed, 1)->dropped);
  EXPECT_FALSE(shim(failed, 1)->released);
  EXPECT_TRUE(shim(other, 1)->released);
  EXPECT_FALSE(shim(other, 1)->dropped);
  EXPECT_EQ(job(other).runs.at(0).number, 1);
  ASSERT_EQ(job(failed).runs.size(), 1u) << "the rolled-back batch left no run on record";
  EXPECT_EQ(job(failed).runs[0].number, 2);
  ASSERT_NE(shim(failed, 2), nullptr);
  EXPECT_TRUE(shim(failed, 2)->released);
  EXPECT_EQ(count("job.started", a->job.id), 1);
  EXPECT_EQ(count("job.started", b->job.id), 1);
  EXPECT_EQ(world_->failed_commits(), 2);
}

TEST_F(QueueTest, ACleanCleanupsRecordRidesInTheNextCommitOrIsCommittedAloneWithinASecond) {
  start("fake:1");
  auto pending_cleanups = [&] {
    auto runs = store_->runs_in_cleanup(store::CleanupState::kPending);
    EXPECT_TRUE(runs);
    return runs ? runs->size() : 0;
  };
  int64_t a = submit(command("true"));
  end_run(a, 1, exited(0));
  EXPECT_EQ(pending_cleanups(), 1u) << "confirmed, kept for the next commit";
  int commits = world_->commits();
  int64_t b = submit(command("true"));
  EXPECT_EQ(state(b), JobState::kRunning);
  EXPECT_EQ(world_->commits(), commits + 1) << "the submit's own commit took it along";
  EXPECT_EQ(pending_cleanups(), 0u);
  end_run(b, 1, exited(0));
  EXPECT_EQ(pending_cleanups(), 1u);
  commits = world_->commits();
  world_->advance(999);
  EXPECT_EQ(pending_cleanups(), 1u);
  world_->advance(1);
  EXPECT_EQ(pending_cleanups(), 0u) << "committed alone once no commit came within a second";
  EXPECT_EQ(world_->commits(), commits + 1);
}

TEST_F(QueueTest, EndsSeenTogetherAreRecordedInOneCommitBeforeTheListenerHears) {
  world_->set_auto_clean(false);  // no cleanup record commits meanwhile
  start("fake:2");
  int64_t a = submit(command("true"));
  int64_t b = submit(command("false"));
  std::vector<std::vector<std::string>> heard;  // the job events on record at each call
  queue_->set_event_listener([&](int64_t) { heard.push_back(only_jobs(kinds())); });
  // Both shims exit before the actor looks: one turn sees both.
  world_->exit_shim(run_dir(a, 1), exited(0));
  world_->exit_shim(run_dir(b, 1), exited(1));
  int commits_before = world_->commits();
  world_->run();
  queue_->set_event_listener(nullptr);  // `heard` goes before the queue stops
  EXPECT_EQ(state(a), JobState::kSucceeded);
  EXPECT_EQ(state(b), JobState::kFailed);
  ASSERT_FALSE(heard.empty());
  EXPECT_THAT(heard.front(), ElementsAre("job.submitted", "job.started", "job.submitted",
                                         "job.started", "job.succeeded", "job.failed"))
      << "both ends on record, in the order seen, when the listener first hears";
  EXPECT_EQ(world_->commits(), commits_before + 1) << "one transaction for both ends";
}

TEST_F(QueueTest, AFailedBatchOfEndsIsRecordedEndByEnd) {
  world_->set_auto_clean(false);  // no cleanup record takes an injected failure
  start("fake:2");
  int64_t a = submit(command("true"));
  int64_t b = submit(command("true"));
  world_->exit_shim(run_dir(a, 1), exited(0));
  world_->exit_shim(run_dir(b, 1), exited(0));
  // The batch's commit and then the first end alone fail; the second alone works, and the
  // store working again retries the first at once.
  world_->fail_commits(2);
  world_->run();
  EXPECT_EQ(world_->failed_commits(), 2);
  EXPECT_EQ(state(a), JobState::kSucceeded);
  EXPECT_EQ(state(b), JobState::kSucceeded);
  EXPECT_THAT(only_jobs(kinds()), ElementsAre("job.submitted", "job.started", "job.submitted",
                                              "job.started", "job.succeeded", "job.succeeded"));
  auto events = store_->events_after(0, 100);
  ASSERT_TRUE(events);
  std::vector<std::optional<int64_t>> succeeded;
  for (const auto& e : *events) {
    if (e.kind == "job.succeeded") succeeded.push_back(e.job);
  }
  EXPECT_THAT(succeeded, ElementsAre(b, a)) << "the second end was not held back by the first";
}

}  // namespace
}  // namespace gpuq::daemon::testing
