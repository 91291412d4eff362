// SPDX-License-Identifier: Apache-2.0
// cancel, hold, release and retry of an array as one unit (Queue::act_on_array): every element
// the action applies to changes in one transaction or none does, the running elements of a
// cancelled array are stopped, and retry --failed leaves the cancelled elements alone.
#include <fmt/format.h>
#include <gmock/gmock.h>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

using ::testing::ElementsAre;

class ArrayActionTest : public QueueTest {
 protected:
  // An array of elements that each take one GPU.
  std::vector<int64_t> queue_array(const std::string& name, const std::string& text,
                                   const std::string& shell = "sleep 100") {
    JobSpec base = command(shell, 1);
    base.name = name;
    auto sweep = spec::parse_array(text);
    EXPECT_TRUE(sweep);
    auto submitted =
        queue_->submit_sweep(SweepRequest{base, *sweep, fmt::format(R"({{"array":"{}"}})", text)});
    world_->run();
    EXPECT_TRUE(submitted) << submitted.error().message;
    array_id_ = submitted ? submitted->array.id : 0;
    return submitted ? submitted->element_ids : std::vector<int64_t>{};
  }
  Result<ArrayActed> act(ArrayAction action) {
    auto acted = queue_->act_on_array(array_id_, action);
    world_->run();
    return acted;
  }
  std::vector<JobState> states(const std::vector<int64_t>& ids) {
    std::vector<JobState> out;
    for (int64_t id : ids) out.push_back(state(id));
    return out;
  }
  static std::vector<int64_t> ids_of(const ArrayActed& acted) {
    std::vector<int64_t> out;
    for (const Job& job : acted.jobs) out.push_back(job.id);
    return out;
  }
  int64_t array_id_ = 0;
};

constexpr JobState kPending = JobState::kPending;
constexpr JobState kHeld = JobState::kHeld;
constexpr JobState kRunning = JobState::kRunning;
constexpr JobState kCancelled = JobState::kCancelled;

TEST_F(ArrayActionTest, HoldAndReleaseTakeEveryWaitingElementInOneTransactionOrNone) {
  start("fake:1");
  auto ids = queue_array("four", "0-3");
  ASSERT_EQ(states(ids), (std::vector<JobState>{kRunning, kPending, kPending, kPending}));
  world_->fail_commits(1);
  auto refused = act(ArrayAction::kHold);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  EXPECT_EQ(states(ids), (std::vector<JobState>{kRunning, kPending, kPending, kPending})) << "none held";

  int commits = world_->commits();
  auto held = queue_->act_on_array(array_id_, ArrayAction::kHold);
  EXPECT_EQ(world_->commits() - commits, 1) << "three elements, one transaction";
  world_->run();
  ASSERT_TRUE(held) << held.error().message;
  EXPECT_EQ(ids_of(*held), (std::vector<int64_t>{ids[1], ids[2], ids[3]})) << "the pending ones";
  EXPECT_EQ(states(ids), (std::vector<JobState>{kRunning, kHeld, kHeld, kHeld}));
  EXPECT_EQ(count("job.held"), 3);
  EXPECT_EQ(last_data("job.held"), (nlohmann::json{{"array", array_id_}}));
  end_run(ids[0], 1, exited(0));
  EXPECT_EQ(states(ids), (std::vector<JobState>{JobState::kSucceeded, kHeld, kHeld, kHeld})) << "none starts";

  auto again = act(ArrayAction::kHold);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, Code::kConflict);
  EXPECT_EQ(again.error().message, "array four has no element to hold: none is pending");

  auto released = act(ArrayAction::kRelease);
  ASSERT_TRUE(released);
  EXPECT_EQ(ids_of(*released), (std::vector<int64_t>{ids[1], ids[2], ids[3]}));
  EXPECT_EQ(count("job.released"), 3);
  EXPECT_EQ(states(ids), (std::vector<JobState>{JobState::kSucceeded, kRunning, kPending, kPending}));
}

TEST_F(ArrayActionTest, CancelStopsTheRunningElementsAndEndsTheWaitingOnesAtOnce) {
  start("fake:2");
  auto ids = queue_array("four", "0-3");
  ASSERT_EQ(states(ids), (std::vector<JobState>{kRunning, kRunning, kPending, kPending}));
  auto cancelled = act(ArrayAction::kCancel);
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_TRUE(cancelled->recorded);
  EXPECT_EQ(ids_of(*cancelled), ids) << "every unfinished element, by id";
  EXPECT_EQ(states(ids), (std::vector<JobState>{kRunning, kRunning, kCancelled, kCancelled}))
      << "the waiting ones end now; the running ones when their runs end";
  EXPECT_THAT(shim(ids[0], 1)->signals, ElementsAre(SIGTERM));
  EXPECT_THAT(shim(ids[1], 1)->signals, ElementsAre(SIGTERM));
  EXPECT_EQ(count("job.cancelled"), 2);
  EXPECT_EQ(count("job.cancel_requested"), 2);
  EXPECT_EQ(count("array.finished"), 0);
  end_run(ids[0], 1, stopped_by_signal(SIGTERM));
  end_run(ids[1], 1, stopped_by_signal(SIGTERM));
  EXPECT_EQ(states(ids), (std::vector<JobState>{kCancelled, kCancelled, kCancelled, kCancelled}));
  EXPECT_EQ(count("array.finished"), 1);
  EXPECT_EQ(last_data("array.finished")["counts"], (nlohmann::json{{"cancelled", 4}}));
  auto nothing = act(ArrayAction::kCancel);
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.error().message,
            "array four has no element to cancel: none is pending, held, running or blocked");
}

// A brief answer (the API's {"brief": true}) has the ids of every element acted on, the running
// ones asked to stop included, by id, and no jobs: nothing is read again for it.
TEST_F(ArrayActionTest, ABriefAnswerHasTheIdsOfEveryElementActedOnAndNoJobs) {
  start("fake:2");
  auto ids = queue_array("five", "0-4");
  ASSERT_EQ(states(ids), (std::vector<JobState>{kRunning, kRunning, kPending, kPending, kPending}));
  auto held = queue_->act_on_array(array_id_, ArrayAction::kHold, false, /*with_jobs=*/false);
  world_->run();
  ASSERT_TRUE(held) << held.error().message;
  EXPECT_EQ(held->ids, (std::vector<int64_t>{ids[2], ids[3], ids[4]}));
  EXPECT_TRUE(held->jobs.empty());
  EXPECT_EQ(states(ids), (std::vector<JobState>{kRunning, kRunning, kHeld, kHeld, kHeld}));

  auto cancelled = queue_->act_on_array(array_id_, ArrayAction::kCancel, false, /*with_jobs=*/false);
  world_->run();
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_EQ(cancelled->ids, ids) << "the running ones too, in the array's order";
  EXPECT_TRUE(cancelled->jobs.empty());
  EXPECT_TRUE(cancelled->recorded);
  EXPECT_EQ(states(ids), (std::vector<JobState>{kRunning, kRunning, kCancelled, kCancelled, kCancelled}));
  EXPECT_THAT(shim(ids[0], 1)->signals, ElementsAre(SIGTERM));
  EXPECT_EQ(count("job.cancelled"), 3);

  // The full answer has the same elements, as jobs.
  end_run(ids[0], 1, stopped_by_signal(SIGTERM));
  end_run(ids[1], 1, stopped_by_signal(SIGTERM));
  auto retried = act(ArrayAction::kRetry);
  ASSERT_TRUE(retried) << retried.error().message;
  EXPECT_EQ(retried->ids, ids);
  EXPECT_EQ(ids_of(*retried), ids);
}

TEST_F(ArrayActionTest, ACancelThatCannotBeRecordedStillHoldsAndIsRecordedLater) {
  start("fake:1");
  auto ids = queue_array("three", "0-2");
  world_->fail_commits(1000);
  auto cancelled = act(ArrayAction::kCancel);
  ASSERT_TRUE(cancelled) << cancelled.error().message;
  EXPECT_FALSE(cancelled->recorded);
  EXPECT_THAT(shim(ids[0], 1)->signals, ElementsAre(SIGTERM)) << "the stop does not wait for the store";
  end_run(ids[0], 1, stopped_by_signal(SIGTERM));
  world_->fail_commits(0);
  world_->advance(10'000);
  EXPECT_EQ(states(ids), (std::vector<JobState>{kCancelled, kCancelled, kCancelled}));
  EXPECT_TRUE(job(ids[1]).runs.empty() && job(ids[2]).runs.empty()) << "the waiting ones never started";
}

TEST_F(ArrayActionTest, RetryFailedTakesTheFailedElementsAndRetryTheCancelledOnesToo) {
  start("fake:4");
  auto ids = queue_array("four", "0-3");
  end_run(ids[0], 1, exited(0));
  end_run(ids[1], 1, exited(3));
  ASSERT_TRUE(queue_->cancel(ids[2]));
  world_->run();
  end_run(ids[2], 1, stopped_by_signal(SIGTERM));
  end_run(ids[3], 1, exited(4));
  ASSERT_EQ(states(ids), (std::vector<JobState>{JobState::kSucceeded, JobState::kFailed, kCancelled,
                                                 JobState::kFailed}));
  auto failed = act(ArrayAction::kRetryFailed);
  ASSERT_TRUE(failed) << failed.error().message;
  EXPECT_EQ(ids_of(*failed), (std::vector<int64_t>{ids[1], ids[3]}));
  EXPECT_EQ(states(ids), (std::vector<JobState>{JobState::kSucceeded, kRunning, kCancelled, kRunning}));
  EXPECT_EQ(last_data("job.retried"), (nlohmann::json{{"from", "failed"}, {"array", array_id_}}));
  end_run(ids[1], 2, exited(0));
  end_run(ids[3], 2, exited(0));
  auto rest = act(ArrayAction::kRetry);
  ASSERT_TRUE(rest) << rest.error().message;
  EXPECT_EQ(ids_of(*rest), (std::vector<int64_t>{ids[2]}));
  EXPECT_EQ(state(ids[2]), kRunning);
  auto none = act(ArrayAction::kRetryFailed);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message, "array four has no element to retry: none is failed");
}

// `gpuq retry NAME --from-start`: each retried element with steps runs every step again;
// without it, each resumes at the step that failed.
TEST_F(ArrayActionTest, RetryFromStartRunsEveryStepOfEachElementAgain) {
  start("fake:4");
  JobSpec base = command("", 1);
  base.argv.clear();
  base.name = "pipes";
  for (const char* name : {"s0", "s1", "s2"}) {
    JobStep step;
    step.name = name;
    step.argv = {"true"};
    base.steps.push_back(step);
  }
  auto sweep = spec::parse_array("0-1");
  ASSERT_TRUE(sweep);
  auto submitted = queue_->submit_sweep(SweepRequest{base, *sweep, R"({"array":"0-1"})"});
  world_->run();
  ASSERT_TRUE(submitted) << submitted.error().message;
  array_id_ = submitted->array.id;
  const std::vector<int64_t>& ids = submitted->element_ids;
  // Each element's run 1 did step 0 and failed in step 1.
  auto failed_in_step_1 = [&](int64_t id, int run) {
    runner::ExitRecord record = exited(3);
    StepRun s0, s1;
    s0.index = 0;
    s0.state = StepState::kSucceeded;
    s0.started_at_ms = 1;
    s0.exit_code = 0;
    s1.index = 1;
    s1.state = StepState::kFailed;
    s1.started_at_ms = 1;
    s1.exit_code = 3;
    record.steps = {s0, s1};
    end_run(id, run, record);
  };
  for (int64_t id : ids) failed_in_step_1(id, 1);
  ASSERT_EQ(states(ids), (std::vector<JobState>{JobState::kFailed, JobState::kFailed}));

  auto again = queue_->act_on_array(array_id_, ArrayAction::kRetryFailed, /*from_start=*/true);
  world_->run();
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(ids_of(*again), ids);
  for (int64_t id : ids) {
    EXPECT_EQ(state(id), kRunning);
    EXPECT_EQ(world_->run_specs().at(run_dir(id, 2)).first_step, 0)
        << "element " << id << " begins at step 0";
    EXPECT_FALSE(job(id).steps_from_start) << "the mark is spent by the run it asked for";
  }
  EXPECT_EQ(last_data("job.retried"),
            (nlohmann::json{{"from", "failed"}, {"array", array_id_}, {"from_start", true}}));

  // A plain retry resumes each element at the step that failed.
  for (int64_t id : ids) failed_in_step_1(id, 2);
  auto resumed = act(ArrayAction::kRetry);
  ASSERT_TRUE(resumed) << resumed.error().message;
  for (int64_t id : ids) EXPECT_EQ(world_->run_specs().at(run_dir(id, 3)).first_step, 1);
  EXPECT_EQ(last_data("job.retried")["from_start"], false);
}

}  // namespace
}  // namespace gpuq::daemon::testing
