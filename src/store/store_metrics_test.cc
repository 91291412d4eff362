// SPDX-License-Identifier: Apache-2.0
#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_fixture.h"

namespace gpuq::store {
namespace {

class StoreMetricsTest : public testing::StoreFixture {
 protected:
  void add_event(const std::string& kind, std::optional<int64_t> job, int64_t time_ms) {
    Event e;
    e.kind = kind;
    e.job = job;
    e.time_ms = time_ms;
    ASSERT_TRUE(store_->append_event(e));
  }
};

TEST_F(StoreMetricsTest, CountsGroupByKindStateAndOutcome) {
  int64_t a = seed_job(JobState::kPending);
  seed_job(JobState::kPending);
  seed_job(JobState::kFailed);
  add_event("job.submitted", a, 1);
  add_event("job.submitted", a, 2);
  add_event("daemon.started", std::nullopt, 3);
  gpuq::Run run;
  run.job_id = a;
  run.number = 1;
  run.started_at_ms = 5;
  run.run_dir = "/x";
  auto row = store_->insert_run(run);
  ASSERT_TRUE(row);
  run.number = 2;
  auto row2 = store_->insert_run(run);
  ASSERT_TRUE(row2);
  ASSERT_TRUE(store_->finish_run(*row, 6, 0, std::nullopt, RunOutcome::kSucceeded));

  using Counts = Store::Counts;
  EXPECT_EQ(*store_->event_counts(), (Counts{{"daemon.started", 1}, {"job.submitted", 2}}));
  EXPECT_EQ(*store_->job_counts(), (Counts{{"failed", 1}, {"pending", 2}}));
  EXPECT_EQ(*store_->run_counts(), (Counts{{"running", 1}, {"succeeded", 1}}));
}

TEST_F(StoreMetricsTest, RequeuedAtIsTheLatestEventThatQueuedTheJobAgain) {
  int64_t job = seed_job(JobState::kPending);
  int64_t other = seed_job(JobState::kPending);
  add_event("job.submitted", job, 100);
  EXPECT_EQ(*store_->requeued_at(job), 0);  // the submit is the job's submitted_at
  add_event("job.started", job, 200);
  add_event("job.retrying", job, 300);
  add_event("job.started", job, 400);
  add_event("job.retried", other, 500);  // another job's
  EXPECT_EQ(*store_->requeued_at(job), 300);
  add_event("job.failed", job, 600);
  add_event("job.retried", job, 700);
  EXPECT_EQ(*store_->requeued_at(job), 700);
}

}  // namespace
}  // namespace gpuq::store
