// SPDX-License-Identifier: Apache-2.0
// A run's step records and a job's "from the start" mark survive the store (schema 15).
#include <gtest/gtest.h>

#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

class StoreStepsTest : public testing::StoreFixture {};

TEST_F(StoreStepsTest, ARunKeepsWhereItBeganAndWhatEachStepDid) {
  Job job;
  job.spec.cwd = "/tmp";
  JobStep prepare;
  prepare.name = "prepare";
  prepare.argv = {"true"};
  JobStep train = prepare;
  train.name = "train";
  job.spec.steps = {prepare, train};
  job.submitted_at_ms = 1000;
  int64_t job_id = 0, run_row = 0;
  ASSERT_TRUE(store_->transaction([&]() -> Status {
    auto id = store_->insert_job(job);
    if (!id) return tl::unexpected(id.error());
    job_id = *id;
    gpuq::Run run;
    run.job_id = job_id;
    run.number = 1;
    run.started_at_ms = 2000;
    run.run_dir = "/x";
    run.first_step = 1;
    auto row = store_->insert_run(run);
    if (!row) return tl::unexpected(row.error());
    run_row = *row;
    StepRun step;
    step.index = 1;
    step.state = StepState::kFailed;
    step.started_at_ms = 2001;
    step.ended_at_ms = 2500;
    step.exit_code = 3;
    step.log_offset = 17;
    if (auto st = store_->set_run_steps(run_row, {step}); !st) return st;
    return store_->set_steps_from_start(job_id, true);
  }));
  auto loaded = store_->find_job(job_id);
  ASSERT_TRUE(loaded && *loaded) << (loaded ? "" : loaded.error().message);
  const Job& j = **loaded;
  ASSERT_EQ(j.spec.steps.size(), 2u);
  EXPECT_EQ(j.spec.steps[1].name, "train");
  EXPECT_TRUE(j.steps_from_start);
  ASSERT_EQ(j.runs.size(), 1u);
  EXPECT_EQ(j.runs[0].first_step, 1);
  ASSERT_EQ(j.runs[0].steps.size(), 1u);
  EXPECT_EQ(j.runs[0].steps[0].index, 1);
  EXPECT_EQ(j.runs[0].steps[0].state, StepState::kFailed);
  EXPECT_EQ(j.runs[0].steps[0].exit_code, 3);
  EXPECT_EQ(j.runs[0].steps[0].log_offset, 17);
  EXPECT_EQ(j.runs[0].steps[0].ended_at_ms, 2500);
  auto last = store_->last_begun_run(job_id);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->steps.size(), 1u);
  ASSERT_TRUE(store_->transaction([&] { return store_->set_steps_from_start(job_id, false); }));
  EXPECT_FALSE((*store_->find_job(job_id))->steps_from_start);
}

}  // namespace
}  // namespace gpuq::store
