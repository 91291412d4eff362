// SPDX-License-Identifier: Apache-2.0
// Fair share and per-user limits through the queue actor on the FakeWorld: two users' jobs
// interleave on fake:2, a job over its user's max_gpus waits with the reason and starts when
// the user's other job ends, and max_queued refuses a submit, a plan and a sweep whole.
#include <gtest/gtest.h>

#include "daemon/queue_test_support.h"

namespace gpuq::daemon::testing {
namespace {

class QueueUsersTest : public QueueTest {
 protected:
  static JobSpec of(const std::string& user, int gpus = 1) {
    JobSpec spec = command("true", gpus);
    spec.user = user;
    spec.estimate_ms = 3'600'000;
    return spec;
  }
  // The ids of the jobs running now, ascending.
  std::vector<int64_t> running() {
    std::vector<int64_t> ids;
    auto jobs = store_->list_jobs(true, false);
    EXPECT_TRUE(jobs);
    for (const Job& j : *jobs) {
      if (j.state == JobState::kRunning) ids.push_back(j.id);
    }
    return ids;
  }
};

TEST_F(QueueUsersTest, TwoUsersJobsInterleaveOnTwoGpus) {
  config_.users.fair_share = true;
  start("fake:2");
  // alice fills the machine first and queues three more; bob queues three after them.
  std::vector<int64_t> alice, bob;
  for (int i = 0; i < 5; ++i) alice.push_back(submit(of("alice")));
  for (int i = 0; i < 3; ++i) bob.push_back(submit(of("bob")));
  EXPECT_EQ(running(), (std::vector<int64_t>{alice[0], alice[1]}));
  // alice has used her two GPUs and bob nothing: each GPU that frees goes to bob first, then
  // they alternate, though all of alice's jobs were queued before bob's.
  world_->advance(60'000);
  end_run(alice[0], 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{alice[1], bob[0]}));
  end_run(alice[1], 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{bob[0], bob[1]}));
  // Two minutes on, bob's two running jobs have used more than alice's two finished ones.
  world_->advance(120'000);
  end_run(bob[0], 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{alice[2], bob[1]}));
}

// Jobs that each take the whole machine, without estimates: one runs at a time, and each start
// goes to the user who has used less, though bob queued all four of his before alice's two.
TEST_F(QueueUsersTest, WholeMachineJobsGoToTheUserWhoUsedLess) {
  start("fake:2");
  auto whole = [](const std::string& user) {
    JobSpec spec = command("true", 2);
    spec.user = user;
    return spec;
  };
  int64_t blocker = submit(whole("carol"));
  std::vector<int64_t> alice, bob;
  for (int i = 0; i < 4; ++i) bob.push_back(submit(whole("bob")));
  for (int i = 0; i < 2; ++i) alice.push_back(submit(whole("alice")));
  EXPECT_EQ(running(), (std::vector<int64_t>{blocker}));
  world_->advance(1'000);
  end_run(blocker, 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{bob[0]}));  // neither has used anything: first queued
  world_->advance(600);
  end_run(bob[0], 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{alice[0]}));
  world_->advance(100);
  end_run(alice[0], 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{alice[1]}));
}

TEST_F(QueueUsersTest, WithoutFairShareTheQueueOrderStays) {
  config_.users.fair_share = false;
  start("fake:2");
  std::vector<int64_t> alice, bob;
  for (int i = 0; i < 4; ++i) alice.push_back(submit(of("alice")));
  bob.push_back(submit(of("bob")));
  end_run(alice[0], 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{alice[1], alice[2]}));
}

TEST_F(QueueUsersTest, ALimitedJobWaitsWithItsReasonAndStartsWhenTheOtherEnds) {
  config_.users.limits.max_gpus = 1;
  start("fake:2");
  int64_t first = submit(of("alice"));
  int64_t second = submit(of("alice"));
  EXPECT_EQ(running(), (std::vector<int64_t>{first}));
  EXPECT_EQ(queue_->waits()->reason(second, world_->now()), "user limit: 1 of 1 GPUs in use");
  // The GPU it leaves free is anyone else's.
  int64_t other = submit(of("bob"));
  EXPECT_EQ(running(), (std::vector<int64_t>{first, other}));
  end_run(first, 1, exited(0));
  EXPECT_EQ(running(), (std::vector<int64_t>{second, other}));
  EXPECT_EQ(state(second), JobState::kRunning);
}

TEST_F(QueueUsersTest, PerUserMaxRunningReplacesTheDefault) {
  config_.users.limits.max_running = 2;
  config_.users.per_user["alice"].max_running = 1;
  start("fake:2");
  int64_t first = submit(of("alice"));
  int64_t second = submit(of("alice"));
  EXPECT_EQ(running(), (std::vector<int64_t>{first}));
  EXPECT_EQ(queue_->waits()->reason(second, world_->now()), "user limit: 1 of 1 running jobs");
}

TEST_F(QueueUsersTest, MaxQueuedRefusesWholeAndCreatesNothing) {
  config_.users.limits.max_queued = 2;
  start("fake:2");
  submit(of("alice"));
  submit(of("alice"));
  auto jobs_before = store_->list_jobs(true, true);
  ASSERT_TRUE(jobs_before);
  auto refused = queue_->submit(of("alice"));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kResourceExhausted);
  EXPECT_EQ(refused.error().message,
            "user limit: alice has 2 of 2 queued jobs (max_queued in [users]); wait for some to "
            "finish or ask an admin");
  PlanRequest plan;
  for (const char* name : {"a", "b"}) {
    JobSpec spec = of("alice");
    spec.name = name;
    plan.jobs.push_back(spec);
    plan.sweeps.emplace_back();
  }
  auto plan_refused = queue_->submit_plan(plan);
  ASSERT_FALSE(plan_refused);
  EXPECT_EQ(plan_refused.error().code, Code::kResourceExhausted);
  SweepRequest sweep;
  sweep.base = of("alice");
  sweep.base.name = "grid";
  auto parsed = spec::parse_array("0-1");
  ASSERT_TRUE(parsed) << parsed.error().message;
  sweep.sweep = *parsed;
  auto sweep_refused = queue_->submit_sweep(sweep);
  ASSERT_FALSE(sweep_refused);
  EXPECT_EQ(sweep_refused.error().code, Code::kResourceExhausted);
  world_->run();
  auto jobs_after = store_->list_jobs(true, true);
  ASSERT_TRUE(jobs_after);
  EXPECT_EQ(jobs_after->size(), jobs_before->size());
  // Other users, and jobs of nobody, are not limited by alice's count.
  EXPECT_TRUE(queue_->submit(of("bob")));
}

TEST_F(QueueUsersTest, UsageIsLoadedFromFinishedRunsAtStart) {
  config_.users.fair_share = true;
  start("fake:1");
  int64_t job = submit(of("alice"));
  const int64_t started = world_->now();
  world_->advance(3'600'000);
  runner::ExitRecord record = exited(0);  // the shim writes the run's real times
  record.started_at_ms = started;
  record.ended_at_ms = world_->now();
  end_run(job, 1, record);
  restart("fake:1");
  EXPECT_GT(queue_->users().usage_gpu_ms("alice", world_->now()), 0);
  EXPECT_EQ(queue_->users().usage_gpu_ms("bob", world_->now()), 0);
}

}  // namespace
}  // namespace gpuq::daemon::testing
