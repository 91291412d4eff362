// SPDX-License-Identifier: Apache-2.0
// Fair share and per-user limits: users interleave within a priority by their decayed usage, a
// heavy user's deep queue does not starve a light user, the order is today's when fair share is
// off or one user owns every job, and limits keep jobs back with their exact reasons.
#include "sched/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sched/test_support.h"

namespace gpuq::sched::testing {
namespace {

constexpr int64_t kHour = 3'600'000;

Snapshot two_users(int gpus) {
  Snapshot s = machine(gpus);
  s.policy = Policy::kPriority;
  s.fair_share = true;
  s.owners.resize(2);
  return s;
}

std::vector<int64_t> order_ids(const Snapshot& s) {
  std::vector<int64_t> ids;
  for (uint32_t index : fair_share_order(s)) ids.push_back(s.queue[index].id);
  return ids;
}

TEST(FairShare, TwoUsersWithEqualUsageInterleaveJobByJob) {
  Snapshot s = two_users(1);
  for (int i = 0; i < 3; ++i) s.queue.push_back(job(1 + i, 1).order(i).owner(0).estimate(kHour));
  for (int i = 0; i < 3; ++i) s.queue.push_back(job(11 + i, 1).order(10 + i).owner(1).estimate(kHour));
  EXPECT_EQ(order_ids(s), (std::vector<int64_t>{1, 11, 2, 12, 3, 13}));
  // The first in that order is the one that starts on the one GPU.
  s.queue = {s.queue[1], s.queue[2], s.queue[3]};  // jobs 2, 3 of user 0; job 11 of user 1
  s.owners[0].usage_gpu_ms = 1;
  EXPECT_EQ(started(schedule(s)), (std::vector<int64_t>{11}));
}

TEST(FairShare, AHeavyUsersThousandJobsDoNotStarveALightUsersOne) {
  Snapshot s = two_users(1);
  s.owners[0].usage_gpu_ms = 10.0 * kHour;
  for (int i = 0; i < 1000; ++i) s.queue.push_back(job(1 + i, 1).order(i).owner(0).estimate(kHour));
  s.queue.push_back(job(5000, 1).order(5000).owner(1).estimate(kHour));
  Decision d = schedule(s);
  EXPECT_EQ(started(d), (std::vector<int64_t>{5000}));
  EXPECT_EQ(order_ids(s).front(), 5000);
}

TEST(FairShare, APriorityStillComesFirst) {
  Snapshot s = two_users(1);
  s.owners[1].usage_gpu_ms = 100.0 * kHour;
  s.queue = {job(1, 1).order(1).owner(0).priority(50), job(2, 1).order(2).owner(1).priority(10)};
  EXPECT_EQ(order_ids(s), (std::vector<int64_t>{2, 1}));
}

TEST(FairShare, ProjectedChargesLetALightUserCatchUp) {
  // User 1 has used 3 GPU-hours; user 0 none: user 0's 1-hour jobs go first until its projected
  // usage passes user 1's, then they alternate (ties to queue order).
  Snapshot s = two_users(1);
  s.owners[1].usage_gpu_ms = 3.0 * kHour;
  for (int i = 0; i < 5; ++i) s.queue.push_back(job(1 + i, 1).order(10 + i).owner(0).estimate(kHour));
  for (int i = 0; i < 2; ++i) s.queue.push_back(job(11 + i, 1).order(i).owner(1).estimate(kHour));
  EXPECT_EQ(order_ids(s), (std::vector<int64_t>{1, 2, 3, 11, 4, 12, 5}));
}

TEST(FairShare, OffOrOneUserKeepsTodaysOrder) {
  Snapshot s = two_users(2);
  s.owners[0].usage_gpu_ms = 50.0 * kHour;
  for (int i = 0; i < 6; ++i) {
    s.queue.push_back(job(1 + i, 1).order(6 - i).owner(i % 2).priority(i < 3 ? 50 : 10));
  }
  Snapshot plain = s;
  plain.fair_share = false;
  for (PendingJob& p : plain.queue) p.owner = -1;
  const std::vector<int64_t> today = started(schedule(plain));
  s.fair_share = false;
  EXPECT_FALSE(fair_share_applies(s));
  EXPECT_EQ(started(schedule(s)), today);
  s.fair_share = true;
  for (PendingJob& p : s.queue) p.owner = 1;
  EXPECT_FALSE(fair_share_applies(s));
  EXPECT_EQ(started(schedule(s)), today);
  // Under fifo, arrival order stays.
  for (size_t i = 0; i < s.queue.size(); ++i) s.queue[i].owner = static_cast<int>(i % 2);
  s.policy = Policy::kFifo;
  EXPECT_FALSE(fair_share_applies(s));
}

TEST(FairShare, DecayHalvesUsageEachHalfLife) {
  EXPECT_DOUBLE_EQ(decayed(8.0, 2 * kHour, kHour), 2.0);
  EXPECT_DOUBLE_EQ(decayed(8.0, 2 * kHour, 0), 8.0);
  // One GPU over the last half-life: H/ln2 x (1 - 1/2) of GPU-ms, the same seen at its end.
  const double last_half_life = decayed_gpu_ms(1, 0, kHour, kHour, kHour);
  EXPECT_NEAR(last_half_life, kHour / std::log(2.0) / 2, 1e-3);
  // Looked at one half-life later, it counts half.
  EXPECT_NEAR(decayed_gpu_ms(1, 0, kHour, 2 * kHour, kHour), last_half_life / 2, 1e-3);
  EXPECT_DOUBLE_EQ(decayed_gpu_ms(2, 0, kHour, kHour, 0), 2.0 * kHour);
}

TEST(UserLimits, MaxGpusKeepsAJobBackWithItsReasonAndHoldsNothingBack) {
  Snapshot s = two_users(8);
  s.owners[0].max_gpus = 4;
  s.running = {run(100).slots({0, 1, 2, 3}).owner(0)};
  for (int g = 0; g < 4; ++g) s.gpus[g].held_exclusive = true;
  s.queue = {job(1, 1).order(1).owner(0), job(2, 2).order(2).owner(1)};
  Decision d = schedule(s);
  EXPECT_EQ(started(d), (std::vector<int64_t>{2}));
  EXPECT_EQ(text_of(d, s, 1), "user limit: 4 of 4 GPUs in use");
  EXPECT_EQ(check_decision(s, d), "");
}

TEST(UserLimits, CountsJobsStartedEarlierInThePass) {
  Snapshot s = two_users(8);
  s.owners[0].max_gpus = 4;
  s.owners[1].max_running = 2;
  s.queue = {job(1, 3).order(1).owner(0), job(2, 2).order(2).owner(0),
             job(3, 1).order(3).owner(0), job(4, 1).order(4).owner(1),
             job(5, 0).order(5).owner(1), job(6, 1).order(6).owner(1),
             job(7, 1).order(7)};
  s.fair_share = false;
  Decision d = schedule(s);
  EXPECT_EQ(started(d), (std::vector<int64_t>{1, 3, 4, 5, 7}));
  EXPECT_EQ(text_of(d, s, 2), "user limit: 3 of 4 GPUs in use");
  EXPECT_EQ(text_of(d, s, 6), "user limit: 2 of 2 running jobs");
}

TEST(UserLimits, RunningJobsCountAgainstMaxRunning) {
  Snapshot s = two_users(8);
  s.owners[0].max_running = 8;
  for (int i = 0; i < 8; ++i) s.running.push_back(run(100 + i).owner(0));
  s.queue = {job(1, 1).order(1).owner(0), job(2, 1).order(2).owner(-1)};
  Decision d = schedule(s);
  EXPECT_EQ(text_of(d, s, 1), "user limit: 8 of 8 running jobs");
  EXPECT_EQ(started(d), (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace gpuq::sched::testing
