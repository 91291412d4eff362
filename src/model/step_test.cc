// SPDX-License-Identifier: Apache-2.0
#include "model/step.h"

#include <gtest/gtest.h>

namespace gpuq {
namespace {

StepRun step(int index, StepState state) {
  StepRun s;
  s.index = index;
  s.state = state;
  return s;
}

TEST(Steps, ARunResumesAtTheFirstStepItDidNotFinish) {
  // Steps 0 and 1 succeeded, 2 was stopped by a preemption: the next run starts at 2.
  EXPECT_EQ(resume_step({step(0, StepState::kSucceeded), step(1, StepState::kSucceeded), step(2, StepState::kStopped),
                         step(3, StepState::kPending)},
                        0, 4),
            2);
  // A skipped step counts as done.
  EXPECT_EQ(resume_step({step(0, StepState::kSkipped), step(1, StepState::kFailed)}, 0, 2), 1);
}

TEST(Steps, ARunThatBeganLaterCountsFromWhereItBegan) {
  // The run began at step 2 (0 and 1 done by earlier runs) and finished 2: the next begins at 3.
  EXPECT_EQ(resume_step({step(2, StepState::kSucceeded), step(3, StepState::kTimedOut)}, 2, 4), 3);
  // A run that recorded nothing (lost before its first step) begins where it began.
  EXPECT_EQ(resume_step({}, 2, 4), 2);
  // Every step done: the count.
  EXPECT_EQ(resume_step({step(0, StepState::kSucceeded), step(1, StepState::kSucceeded)}, 0, 2), 2);
}

TEST(Steps, RecordsAreOutOfOrderOrFromAnotherListStopTheCount) {
  // A record that does not follow on (a gap) is not trusted past it.
  EXPECT_EQ(resume_step({step(0, StepState::kSucceeded), step(2, StepState::kSucceeded)}, 0, 3), 1);
  // Never past the count, even if the records say more (a spec with fewer steps).
  EXPECT_EQ(resume_step({step(0, StepState::kSucceeded), step(1, StepState::kSucceeded)}, 0, 1), 1);
}

TEST(Steps, StateNamesRoundTripAndABadOneIsNamed) {
  for (StepState s : {StepState::kPending, StepState::kRunning, StepState::kSucceeded, StepState::kFailed,
                      StepState::kSkipped, StepState::kStopped, StepState::kTimedOut}) {
    auto parsed = parse_step_state(to_string(s));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, s);
  }
  auto bad = parse_step_state("done");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"done\" is not a step state"), std::string::npos);
}

TEST(Steps, SpecsAndRunsRoundTripThroughJson) {
  StepSpec spec{"train.sh", {"bash", "train.sh", "--lr", "3e-4"}, 60'000, "test -f done"};
  auto back = step_spec_from_json(step_spec_to_json(spec));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->name, "train.sh");
  EXPECT_EQ(back->argv, spec.argv);
  EXPECT_EQ(back->timeout_ms, 60'000);
  EXPECT_EQ(back->done_if, "test -f done");
  EXPECT_FALSE(step_spec_from_json(nlohmann::json{{"argv", nlohmann::json::array()}}));

  StepRun run{3, StepState::kFailed, 1000, 2000, 2, std::nullopt, 4096};
  auto again = step_run_from_json(step_run_to_json(run));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->index, 3);
  EXPECT_EQ(again->state, StepState::kFailed);
  EXPECT_EQ(again->exit_code, 2);
  EXPECT_FALSE(again->signal);
  EXPECT_EQ(again->log_offset, 4096);
  EXPECT_FALSE(step_run_from_json(nlohmann::json{{"index", 0}, {"state", "weird"}}));
}

}  // namespace
}  // namespace gpuq
