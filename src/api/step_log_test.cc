// SPDX-License-Identifier: Apache-2.0
// GET /v1/jobs/{ref}/log?step=N: which run and which bytes hold a step's output, and the
// errors that name the job's steps and the fix (api/step_log.h).
#include "api/step_log.h"

#include <gtest/gtest.h>

#include "api/bodies.h"
#include "model/testing/three_step_job.h"

namespace gpuq::api {
namespace {

// testing::three_step_job() as job 7, "pipe".
Job pipeline() {
  Job job = testing::three_step_job();
  job.id = 7;
  job.spec.name = "pipe";
  return job;
}

TEST(StepSlice, TheNewestRunThatReachedTheStepAndItsBytes) {
  Job job = pipeline();
  auto s0 = step_slice(job, 0, std::nullopt);
  ASSERT_TRUE(s0) << s0.error().message;
  EXPECT_EQ(s0->run, 1);
  EXPECT_EQ(s0->state, "succeeded");
  EXPECT_EQ(s0->begin, 0);
  EXPECT_EQ(s0->end, 4);
  auto s1 = step_slice(job, 1, std::nullopt);
  ASSERT_TRUE(s1);
  EXPECT_EQ(s1->run, 2);
  EXPECT_EQ(s1->state, "running");
  EXPECT_EQ(s1->end, std::nullopt);
  // Asked for by run: run 1's s1, to the end of that log.
  auto old = step_slice(job, 1, 1);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->run, 1);
  EXPECT_EQ(old->state, "failed");
  EXPECT_EQ(old->begin, 4);
  EXPECT_EQ(old->end, std::nullopt);
  // Not reached by any run yet: run 0, pending (a follower waits for it).
  auto s2 = step_slice(job, 2, std::nullopt);
  ASSERT_TRUE(s2);
  EXPECT_EQ(s2->run, 0);
  EXPECT_EQ(s2->state, "pending");
  // The running run may still reach it.
  auto later = step_slice(job, 2, 2);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->run, 2);
  EXPECT_EQ(later->state, "pending");
}

TEST(StepSlice, ErrorsNameTheJobItsStepsAndTheFix) {
  Job job = pipeline();
  auto out_of_range = step_slice(job, 3, std::nullopt);
  ASSERT_FALSE(out_of_range);
  EXPECT_EQ(out_of_range.error().code, Code::kInvalidArgument);
  EXPECT_EQ(out_of_range.error().message,
            "job 7 (pipe) has 3 steps, numbered 0 to 2; there is no step 3: ask for one of those "
            "(gpuq show 7 "
            "lists them)");
  Job plain = job;
  plain.spec.steps.clear();
  plain.spec.name.clear();
  auto none = step_slice(plain, 0, std::nullopt);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message,
            "job 7 has no steps (it was not submitted with --step); leave out step to read its "
            "whole log (gpuq "
            "logs 7)");
  auto no_run = step_slice(job, 0, 5);
  ASSERT_FALSE(no_run);
  EXPECT_EQ(no_run.error().code, Code::kNotFound);
  EXPECT_NE(no_run.error().message.find("no run 5 (it has run 2 times)"), std::string::npos)
      << no_run.error().message;
  auto not_reached = step_slice(job, 0, 2);  // run 2 began at step 1
  ASSERT_FALSE(not_reached);
  EXPECT_EQ(not_reached.error().message,
            "run 2 of job 7 (pipe) did not reach step 0; run 1 did (leave out run for it)");
}

TEST(StepSlice, AReadTakesOnlyTheStepsBytes) {
  StepSlice slice{1, "succeeded", 4, 10};
  SliceRead all = read_in_slice(slice, 20, 0, 1 << 20);
  EXPECT_EQ(all.first, 4);
  EXPECT_EQ(all.count, 6);
  EXPECT_EQ(all.size, 6);
  SliceRead rest = read_in_slice(slice, 20, 4, 1 << 20);
  EXPECT_EQ(rest.first, 8);
  EXPECT_EQ(rest.count, 2);
  SliceRead past = read_in_slice(slice, 20, 99, 1 << 20);
  EXPECT_EQ(past.count, 0);
  SliceRead limited = read_in_slice(slice, 20, 1, 2);
  EXPECT_EQ(limited.first, 5);
  EXPECT_EQ(limited.count, 2);
  // A running step's bytes grow with the log.
  StepSlice open{2, "running", 4, std::nullopt};
  EXPECT_EQ(read_in_slice(open, 9, 0, 1 << 20).size, 5);
  EXPECT_EQ(read_in_slice(open, 3, 0, 1 << 20).size, 0);     // a log shorter than the offset (cut)
  EXPECT_EQ(read_in_slice(StepSlice{}, 9, 0, 10).count, 0);  // no run reached it
  // A running run that has not reached the step yet: nothing (not the run's whole log).
  SliceRead pending = read_in_slice(StepSlice{2, "pending", 0, std::nullopt}, 9, 0, 10);
  EXPECT_EQ(pending.count, 0);
  EXPECT_EQ(pending.size, 0);
}

TEST(StepSlice, TheLogQueryTakesAStep) {
  auto query = decode_log_query(parse_target("/v1/jobs/7/log?step=2&offset=5"));
  ASSERT_TRUE(query);
  EXPECT_EQ(query->step, 2);
  EXPECT_EQ(query->offset, 5);
  EXPECT_FALSE(decode_log_query(parse_target("/v1/jobs/7/log?step=-1")));
  EXPECT_FALSE(decode_log_query(parse_target("/v1/jobs/7/log?step=x")));
  EXPECT_EQ(decode_log_query(parse_target("/v1/jobs/7/log"))->step, std::nullopt);
}

}  // namespace
}  // namespace gpuq::api
