// SPDX-License-Identifier: Apache-2.0
// A job's steps across its runs: the run that last reached a step, where each step's output
// lies in output.log, and those offsets in the job's JSON (docs/api.md, "Objects").
#include "model/job_steps.h"

#include <gtest/gtest.h>

#include "model/json.h"
#include "model/testing/three_step_job.h"

namespace gpuq {
namespace {

using nlohmann::json;

using testing::three_step_job;

TEST(JobSteps, TheNewestRunThatReachedAStepHasIt) {
  Job job = three_step_job();
  auto s0 = newest_run_of_step(job, 0);
  ASSERT_TRUE(s0);
  EXPECT_EQ(s0->run->number, 1);
  auto s1 = newest_run_of_step(job, 1);
  ASSERT_TRUE(s1);
  EXPECT_EQ(s1->run->number, 2);
  EXPECT_EQ(s1->step->state, StepState::kRunning);
  EXPECT_FALSE(newest_run_of_step(job, 2));  // pending in both runs: not reached
  EXPECT_FALSE(newest_run_of_step(job, 7));
}

TEST(JobSteps, AStepsOutputEndsWhereTheNextStepOfItsRunBegan) {
  Job job = three_step_job();
  const gpuq::Run& first = job.runs[0];
  EXPECT_EQ(step_log_end(first, first.steps[0]), 4);
  EXPECT_EQ(step_log_end(first, first.steps[1]), std::nullopt);  // the last it reached
  const gpuq::Run& second = job.runs[1];
  EXPECT_EQ(step_log_end(second, second.steps[0]), std::nullopt);  // running
}

TEST(JobSteps, TheJobsJsonCarriesEachStepsLogOffsetAndEnd) {
  json j = job_to_json(three_step_job());
  const json& steps = j["steps"];
  ASSERT_EQ(steps.size(), 3u) << j.dump();
  EXPECT_EQ(steps[0]["run"], 1);
  EXPECT_EQ(steps[0]["log_offset"], 0);
  EXPECT_EQ(steps[0]["log_end"], 4);
  EXPECT_EQ(steps[1]["run"], 2);
  EXPECT_EQ(steps[1]["state"], "running");
  EXPECT_EQ(steps[1]["log_offset"], 0);
  EXPECT_TRUE(steps[1]["log_end"].is_null());
  EXPECT_TRUE(steps[2]["log_offset"].is_null());
  EXPECT_TRUE(steps[2]["log_end"].is_null());
  // The fields that were there before stay as they were.
  for (const char* key :
       {"index", "name", "state", "started", "ended", "exit_code", "signal", "run", "image"}) {
    EXPECT_TRUE(steps[0].contains(key)) << key;
  }
  EXPECT_EQ(j["step"], 1);
  // Each run's steps: log_end beside the log_offset they had.
  const json& run1 = j["runs"][0]["steps"];
  EXPECT_EQ(run1[0]["log_offset"], 0);
  EXPECT_EQ(run1[0]["log_end"], 4);
  EXPECT_EQ(run1[1]["log_offset"], 4);
  EXPECT_TRUE(run1[1]["log_end"].is_null());
  EXPECT_TRUE(run1[2]["log_end"].is_null());  // not reached
}

TEST(JobSteps, PullAndContainerUserAreNullWithoutAnImage) {
  Job job = three_step_job();
  json plain = job_to_json(job);
  EXPECT_TRUE(plain.contains("pull"));
  EXPECT_TRUE(plain["pull"].is_null());
  EXPECT_TRUE(plain["container_user"].is_null());
  job.spec.steps[1].image = "busybox";
  job.spec.pull = PullPolicy::kAlways;
  job.spec.container_user = "1000:1000";
  json boxed = job_to_json(job);
  EXPECT_EQ(boxed["pull"], "always");
  EXPECT_EQ(boxed["container_user"], "1000:1000");
  EXPECT_TRUE(boxed["image"].is_null());  // the job's own; the step has one
  EXPECT_EQ(boxed["steps"][1]["image"], "busybox");
}

}  // namespace
}  // namespace gpuq
