// SPDX-License-Identifier: Apache-2.0
// The simulator with users: fair share interleaves two users on the virtual clock, each user
// starts at zero usage unless told, and limits keep a user's jobs back as the daemon does.
#include <gtest/gtest.h>

#include "sim/simulate.h"

namespace gpuq::sim {
namespace {

// The users of the jobs `of` made, for SimMachine::users.
std::map<std::string, std::string> users_of;

SimJob of(const std::string& user, std::string name, int64_t submit_s = 0) {
  users_of[name] = user;
  SimJob j;
  j.name = std::move(name);
  j.gpus = 1;
  j.submit_ms = submit_s * 1000;
  j.duration_ms = j.estimate_ms = 600'000;
  return j;
}

int64_t start_of(const SimResult& r, const std::string& name) {
  for (const SimRow& row : r.jobs) {
    if (row.name == name) return row.start_ms;
  }
  ADD_FAILURE() << "no row " << name;
  return -1;
}

SimMachine one_gpu() {
  SimMachine m;
  m.gpus = 1;
  m.users.fair_share = true;
  m.users.of_job = users_of;
  return m;
}

TEST(SimulateUsers, TwoUsersInterleaveOnOneGpu) {
  std::vector<SimJob> jobs = {of("alice", "a1"), of("alice", "a2"), of("alice", "a3"),
                              of("bob", "b1", 1), of("bob", "b2", 1)};
  auto r = simulate(jobs, one_gpu(), sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  // a1 starts alone at 0; then bob (no usage) goes first, then they alternate.
  EXPECT_EQ(start_of(*r, "a1"), 0);
  EXPECT_EQ(start_of(*r, "b1"), 600'000);
  EXPECT_EQ(start_of(*r, "a2"), 1'200'000);
  EXPECT_EQ(start_of(*r, "b2"), 1'800'000);
  EXPECT_EQ(start_of(*r, "a3"), 2'400'000);
  // Without fair share, the queue order.
  SimMachine plain = one_gpu();
  plain.users.fair_share = false;
  auto p = simulate(jobs, plain, sched::Policy::kBackfill);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(start_of(*p, "b1"), 1'800'000);
}

TEST(SimulateUsers, UsageAtTheStartCountsWhenGiven) {
  std::vector<SimJob> jobs = {of("alice", "a1"), of("bob", "b1")};
  SimMachine m = one_gpu();
  m.users.usage_gpu_ms["alice"] = 3'600'000;
  auto r = simulate(jobs, m, sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(start_of(*r, "b1"), 0);
  EXPECT_EQ(start_of(*r, "a1"), 600'000);
}

TEST(SimulateUsers, MaxGpusKeepsAUsersJobsBack) {
  std::vector<SimJob> jobs = {of("alice", "a1"), of("alice", "a2"), of("bob", "b1", 1)};
  SimMachine m;
  m.gpus = 2;
  m.users.of_job = users_of;
  m.users.per_user["alice"].max_gpus = 1;
  auto r = simulate(jobs, m, sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(start_of(*r, "a1"), 0);
  EXPECT_EQ(start_of(*r, "b1"), 1000);
  EXPECT_EQ(start_of(*r, "a2"), 600'000);
}

}  // namespace
}  // namespace gpuq::sim
