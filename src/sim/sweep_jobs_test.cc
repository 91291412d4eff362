// SPDX-License-Identifier: Apache-2.0
// Job arrays in simulations (sim/sweep_jobs.h): elements, the cap as a lane, checked against the
// simulated timeline itself, and dependencies on an array's name.
#include "sim/sweep_jobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace gpuq::sim {
namespace {

SimJob job(const std::string& name, int64_t minutes, int gpus = 1) {
  SimJob j;
  j.name = name;
  j.gpus = gpus;
  j.duration_ms = j.estimate_ms = minutes * 60'000;
  return j;
}

// The most rows whose names start with `prefix` running at one instant of the timeline.
int most_at_once(const SimResult& result, const std::string& prefix) {
  std::vector<std::pair<int64_t, int>> edges;  // (time, +1 start / -1 end); ends sort first
  for (const SimRow& row : result.jobs) {
    if (row.name.rfind(prefix, 0) != 0) continue;
    edges.emplace_back(row.start_ms, 1);
    edges.emplace_back(row.end_ms, -1);
  }
  std::sort(edges.begin(), edges.end());
  int running = 0, most = 0;
  for (const auto& [at, change] : edges) most = std::max(most, running += change);
  return most;
}

TEST(SweepJobs, ACappedArrayNeverRunsMoreThanItsCapAndADependentWaitsForEveryElement) {
  auto sweep = spec::parse_array("0-9%3");
  ASSERT_TRUE(sweep) << sweep.error().message;
  SimJob report = job("report", 5);
  report.after = {"shards"};
  SimMachine machine;
  machine.gpus = 8;
  auto jobs = expand_sweeps({job("shards", 10), report}, {*sweep, std::nullopt}, machine);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 11u);
  EXPECT_EQ((*jobs)[0].name, "shards[0]");
  EXPECT_EQ((*jobs)[9].name, "shards[9]");
  EXPECT_EQ((*jobs)[9].lanes, std::vector<std::string>{"shards%3"});
  ASSERT_EQ(machine.lanes.size(), 1u);
  EXPECT_EQ(machine.lanes[0].name, "shards%3");
  EXPECT_EQ(machine.lanes[0].capacity, 3);
  EXPECT_EQ((*jobs)[10].after.size(), 10u);

  auto result = simulate(*jobs, machine, sched::Policy::kBackfill);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(most_at_once(*result, "shards["), 3) << "8 GPUs free, a cap of 3";
  int64_t last_element_end = 0;
  for (const SimRow& row : result->jobs) {
    if (row.name.rfind("shards[", 0) == 0)
      last_element_end = std::max(last_element_end, row.end_ms);
  }
  EXPECT_EQ(last_element_end, 40 * 60'000) << "10 elements of 10 minutes, 3 at a time: 4 rounds";
  const SimRow& dependent = result->jobs.back();
  EXPECT_EQ(dependent.name, "report");
  EXPECT_EQ(dependent.start_ms, last_element_end);
}

TEST(SweepJobs, AnUncappedGridRunsAsWideAsTheMachineAndNamesElementsByValues) {
  auto lr = spec::parse_grid_param("lr=1e-4,3e-4");
  auto seed = spec::parse_grid_param("seed=0..2");
  ASSERT_TRUE(lr && seed);
  auto sweep = spec::make_grid({*lr, *seed});
  ASSERT_TRUE(sweep);
  SimMachine machine;
  machine.gpus = 4;
  auto jobs = expand_sweeps({job("g", 10)}, {*sweep}, machine);
  ASSERT_TRUE(jobs) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 6u);
  EXPECT_EQ((*jobs)[4].name, "g[lr=3e-4,seed=1]");
  EXPECT_TRUE(machine.lanes.empty());
  auto result = simulate(*jobs, machine, sched::Policy::kBackfill);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(most_at_once(*result, "g["), 4);
}

TEST(SweepJobs, JobsWithoutSweepsAreLeftAsTheyAreAndAMismatchedListIsRefused) {
  SimMachine machine;
  auto jobs = expand_sweeps({job("a", 1), job("b", 1)}, {}, machine);
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->size(), 2u);
  auto refused = expand_sweeps({job("a", 1)}, {std::nullopt, std::nullopt}, machine);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, "2 sweeps for 1 jobs: give one per job");
}

}  // namespace
}  // namespace gpuq::sim
