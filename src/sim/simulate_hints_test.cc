// SPDX-License-Identifier: Apache-2.0
// What a plan says for the simulator alone (SimJob::produced_by, produced_at_frac,
// first_look_frac): a job waits for the point of its producer's run where its input is
// written, and a job's first look is reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/simulate.h"

namespace gpuq::sim {
namespace {

using ::testing::HasSubstr;

SimJob job(std::string name, int gpus, int64_t duration_s) {
  SimJob j;
  j.name = std::move(name);
  j.gpus = gpus;
  j.duration_ms = j.estimate_ms = duration_s * 1000;
  return j;
}

SimMachine machine(int gpus) {
  SimMachine m;
  m.gpus = gpus;
  return m;
}

TEST(SimulateHints, AJobWaitsForThePointWhereItsInputIsWritten) {
  SimJob train = job("train", 1, 100);
  SimJob eval = job("eval", 1, 10);
  eval.produced_by = "train";
  eval.produced_at_frac = 0.3;
  SimJob last = job("last", 1, 10);
  last.produced_by = "train";  // produced_at_frac 1: at the producer's end
  auto r = simulate({eval, train, last}, machine(2), sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs[1].start_ms, 0);        // train
  EXPECT_EQ(r->jobs[0].start_ms, 30'000);   // eval: 30% into train's 100 s
  EXPECT_EQ(r->jobs[2].start_ms, 100'000);  // last: when train ends
  EXPECT_EQ(r->makespan_ms, 110'000);
}

TEST(SimulateHints, TheProducersStartCountsNotItsSubmit) {
  SimJob first = job("first", 1, 50);
  SimJob train = job("train", 1, 100);  // waits for the only GPU
  SimJob eval = job("eval", 0, 10);
  eval.produced_by = "train";
  eval.produced_at_frac = 0.5;
  auto r = simulate({first, train, eval}, machine(1), sched::Policy::kFifo);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs[1].start_ms, 50'000);
  EXPECT_EQ(r->jobs[2].start_ms, 100'000);  // 50 s + half of train's 100 s
}

TEST(SimulateHints, AProducerNotSimulatedHasWrittenTheInput) {
  SimJob eval = job("eval", 1, 10);
  eval.produced_by = "elsewhere";
  auto r = simulate({eval}, machine(1), sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs[0].start_ms, 0);
}

TEST(SimulateHints, AFirstLookIsThatFractionOfTheRun) {
  SimJob train = job("train", 1, 200);
  train.first_look_frac = 0.25;
  SimJob other = job("other", 1, 10);
  auto r = simulate({other, train}, machine(1), sched::Policy::kFifo);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs[1].first_look_ms, 10'000 + 50'000);
  EXPECT_EQ(r->jobs[0].first_look_ms, -1);
}

TEST(SimulateHints, CyclesAndBadFractionsAreRefused) {
  SimJob a = job("a", 1, 10);
  SimJob b = job("b", 1, 10);
  a.produced_by = "b";
  b.after = {"a"};
  auto cycle = simulate({a, b}, machine(1), sched::Policy::kBackfill);
  ASSERT_FALSE(cycle);
  EXPECT_THAT(cycle.error().message, HasSubstr("dependency cycle"));
  SimJob bad = job("bad", 1, 10);
  bad.first_look_frac = 1.5;
  EXPECT_EQ(simulate({bad}, machine(1), sched::Policy::kBackfill).error().message,
            "job 'bad': a fraction of a run must be from 0 to 1");
  bad.first_look_frac = -1;
  bad.produced_at_frac = -0.1;
  EXPECT_FALSE(simulate({bad}, machine(1), sched::Policy::kBackfill));
}

}  // namespace
}  // namespace gpuq::sim
