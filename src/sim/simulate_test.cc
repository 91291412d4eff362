// SPDX-License-Identifier: Apache-2.0
#include "sim/simulate.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuq::sim {
namespace {

using ::testing::HasSubstr;

SimJob job(std::string name, int gpus, int64_t duration_s, std::vector<std::string> after = {}) {
  SimJob j;
  j.name = std::move(name);
  j.gpus = gpus;
  j.duration_ms = j.estimate_ms = duration_s * 1000;
  j.after = std::move(after);
  return j;
}

SimMachine machine(int gpus) {
  SimMachine m;
  m.gpus = gpus;
  return m;
}

const SimRow& row(const SimResult& r, const std::string& name) {
  for (const SimRow& x : r.jobs) {
    if (x.name == name) return x;
  }
  static SimRow none;
  ADD_FAILURE() << "no row " << name;
  return none;
}

TEST(Simulate, ChainOnOneGpu) {
  auto r =
      simulate({job("a", 1, 10), job("b", 1, 20, {"a"})}, machine(1), sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "a").start_ms, 0);
  EXPECT_EQ(row(*r, "a").end_ms, 10000);
  EXPECT_EQ(row(*r, "b").start_ms, 10000);
  EXPECT_EQ(row(*r, "b").end_ms, 30000);
  EXPECT_EQ(row(*r, "b").gpus, std::vector<int>{0});
  EXPECT_EQ(r->makespan_ms, 30000);
  EXPECT_DOUBLE_EQ(r->utilization, 1.0);
  EXPECT_DOUBLE_EQ(r->mean_wait_s, 5.0);  // a waits 0, b waits 10 (for its dependency)
  EXPECT_DOUBLE_EQ(r->p95_wait_s, 10.0);
}

TEST(Simulate, TwoJobsInParallel) {
  auto r = simulate({job("a", 1, 10), job("b", 1, 20)}, machine(2), sched::Policy::kFifo);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "a").start_ms, 0);
  EXPECT_EQ(row(*r, "b").start_ms, 0);
  EXPECT_NE(row(*r, "a").gpus, row(*r, "b").gpus);
  EXPECT_EQ(r->makespan_ms, 20000);
  EXPECT_DOUBLE_EQ(r->utilization, 30.0 / 40.0);
  EXPECT_DOUBLE_EQ(r->mean_wait_s, 0.0);
  EXPECT_DOUBLE_EQ(r->p95_wait_s, 0.0);
}

TEST(Simulate, TwoGpuJobThenOneGpuJobs) {
  auto r = simulate({job("big", 2, 10), job("s1", 1, 5), job("s2", 1, 5)}, machine(2),
                    sched::Policy::kPriority);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "big").gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(row(*r, "s1").start_ms, 10000);
  EXPECT_EQ(row(*r, "s2").start_ms, 10000);
  EXPECT_EQ(r->makespan_ms, 15000);
  EXPECT_DOUBLE_EQ(r->utilization, 1.0);
  EXPECT_DOUBLE_EQ(r->mean_wait_s, 20.0 / 3.0);
  EXPECT_DOUBLE_EQ(r->p95_wait_s, 10.0);  // nearest rank: ceil(0.95 * 3) = 3rd of {0, 10, 10}
}

TEST(Simulate, BetterPriorityFirst) {
  SimJob low = job("low", 1, 10), high = job("high", 1, 10);
  low.priority = 90;
  high.priority = 10;
  auto r = simulate({low, high}, machine(1), sched::Policy::kPriority);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "high").start_ms, 0);
  EXPECT_EQ(row(*r, "low").start_ms, 10000);
}

TEST(Simulate, LaterBetterJobOvertakesAtTheNextEnd) {
  SimJob a = job("a", 1, 10), b = job("b", 1, 10), c = job("c", 1, 10);
  b.priority = 90;
  b.submit_ms = 1000;
  c.priority = 10;
  c.submit_ms = 2000;
  auto r = simulate({a, b, c}, machine(1), sched::Policy::kPriority);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "c").start_ms, 10000);
  EXPECT_EQ(row(*r, "b").start_ms, 20000);
  EXPECT_EQ(r->makespan_ms, 30000);
  // FIFO ignores priorities.
  auto f = simulate({a, b, c}, machine(1), sched::Policy::kFifo);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(row(*f, "b").start_ms, 10000);
  EXPECT_EQ(row(*f, "c").start_ms, 20000);
}

TEST(Simulate, OriginIsTheFirstSubmit) {
  SimJob a = job("a", 1, 10);
  a.submit_ms = 5000;
  auto r = simulate({a}, machine(2), sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "a").start_ms, 5000);
  EXPECT_EQ(r->makespan_ms, 10000);
  EXPECT_DOUBLE_EQ(r->utilization, 0.5);
  EXPECT_DOUBLE_EQ(r->mean_wait_s, 0.0);
}

TEST(Simulate, RunningJobsDelayTheQueue) {
  SimRunning old{"old", {0}, 30000, {}};
  auto r = simulate({job("a", 1, 10)}, machine(1), sched::Policy::kBackfill, {old});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "a").start_ms, 30000);
  EXPECT_EQ(r->makespan_ms, 40000);  // origin 0: the running job is part of the picture
  EXPECT_DOUBLE_EQ(r->utilization, 1.0);
  EXPECT_DOUBLE_EQ(r->mean_wait_s, 30.0);
  ASSERT_EQ(r->jobs.size(), 1u);  // running jobs have no rows
}

TEST(Simulate, DependencyOnARunningJobWaitsForItsEnd) {
  SimRunning train{"train", {0}, 30000, {}};
  auto r = simulate({job("eval", 1, 10, {"train"}), job("other", 1, 5, {"not-simulated"})},
                    machine(2), sched::Policy::kBackfill, {train});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "eval").start_ms, 30000);
  EXPECT_EQ(row(*r, "other").start_ms, 0);  // unknown dependency: already satisfied
  EXPECT_EQ(row(*r, "other").gpus, std::vector<int>{1});
}

TEST(Simulate, ZeroDurationChainsAtOneTime) {
  auto r = simulate({job("a", 1, 0), job("b", 1, 0, {"a"}), job("c", 1, 5, {"b"})}, machine(1),
                    sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "c").start_ms, 0);
  EXPECT_EQ(r->makespan_ms, 5000);
}

TEST(Simulate, AfterAnyAndEstimatesApart) {
  SimJob a = job("a", 1, 10);
  a.estimate_ms = 0;  // the scheduler is told nothing; the run still takes 10 s
  SimJob b = job("b", 1, 1);
  b.after_any = {"a"};
  auto r = simulate({a, b}, machine(4), sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "b").start_ms, 10000);
}

// What the policy does with lanes, reservations and sharing comes from sched; these check
// that the simulator hands it over and applies the decisions faithfully.
TEST(Simulate, LanesReservationsAndSharing) {
  SimMachine m = machine(2);
  m.lanes = {sched::Lane{"net", 1, 0, {}}};
  m.reservations = {sched::Reservation{"evals", {1}}};
  m.gpu_memory_mib = 40000;
  SimJob d1 = job("d1", 0, 10), d2 = job("d2", 0, 10);
  d1.lanes = d2.lanes = {"net"};
  SimJob e = job("e", 1, 5);
  e.reservation = "evals";
  SimJob s1 = job("s1", 1, 20), s2 = job("s2", 1, 20);
  s1.share = s2.share = true;
  s1.gpu_mem_mib = s2.gpu_mem_mib = 15000;
  auto r = simulate({d1, d2, e, s1, s2}, m, sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "d1").start_ms, 0);
  EXPECT_EQ(row(*r, "d2").start_ms, 10000);  // one unit of net
  EXPECT_EQ(row(*r, "e").gpus, std::vector<int>{1});
  EXPECT_EQ(row(*r, "s1").start_ms, 0);
  EXPECT_EQ(row(*r, "s2").start_ms, 0);  // together on the unreserved GPU
  EXPECT_EQ(row(*r, "s1").gpus, std::vector<int>{0});
  EXPECT_EQ(row(*r, "s2").gpus, std::vector<int>{0});
  // GPU 0 busy 0-20 s, GPU 1 busy 0-5 s, over 2 GPUs x 20 s.
  EXPECT_DOUBLE_EQ(r->utilization, 25.0 / 40.0);
}

TEST(Simulate, EmptyInput) {
  auto r = simulate({}, machine(4), sched::Policy::kBackfill);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->makespan_ms, 0);
  EXPECT_DOUBLE_EQ(r->utilization, 0.0);
}

TEST(SimulateErrors, TooManyGpusNamesTheJob) {
  auto r = simulate({job("a", 1, 1), job("huge", 9, 1)}, machine(8), sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("job 'huge' can never start"));
  EXPECT_THAT(r.error().message, HasSubstr("needs 9 GPUs and the machine has 8"));
}

TEST(SimulateErrors, ReservedGpusShrinkThePool) {
  SimMachine m = machine(4);
  m.reservations = {{"eval", {2, 3}}};
  SimJob a = job("a", 3, 1), b = job("b", 3, 1);
  b.reservation = "eval";
  auto r = simulate({a}, m, sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("only 2 of the machine's 4 are not reserved"));
  r = simulate({b}, m, sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("reservation 'eval' has 2"));
  b.reservation = "nope";
  r = simulate({b}, m, sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("unknown reservation 'nope'"));
}

TEST(SimulateErrors, Cycle) {
  auto r = simulate(
      {job("a", 1, 1, {"c"}), job("b", 1, 1, {"a"}), job("c", 1, 1, {"b"}), job("d", 1, 1, {"c"})},
      machine(1), sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("dependency cycle: a -> c -> b -> a"));
  r = simulate({job("a", 1, 1, {"a"})}, machine(1), sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("dependency cycle: a -> a"));
}

TEST(SimulateErrors, BadInput) {
  auto r = simulate({job("a", 1, 1), job("a", 1, 1)}, machine(1), sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("two jobs are named 'a'"));
  SimJob l = job("l", 0, 1);
  l.lanes = {"net"};
  r = simulate({l}, machine(1), sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("job 'l' names unknown lane 'net'"));
  SimMachine m = machine(1);
  m.lanes = {sched::Lane{"net", 1, 0, {"gpu"}}};
  SimJob g = job("g", 1, 1);
  g.lanes = {"net"};
  r = simulate({g}, m, sched::Policy::kBackfill);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("job 'g' can never start: lane 'net' excludes GPU work"));
  r = simulate({job("a", 1, 1)}, machine(1), sched::Policy::kBackfill,
               {SimRunning{"r", {3}, 5, {}}});
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("running job 'r': there is no GPU 3"));
}

TEST(SimulateErrors, ImpossibleDecisionsAreCaught) {
  SimOptions o;
  o.schedule = [](const sched::Snapshot& s) {
    sched::Decision d;
    for (const auto& p : s.queue) d.starts.push_back({p.id, {0}});  // everyone on GPU 0
    return d;
  };
  auto r = simulate({job("a", 1, 1), job("b", 1, 1)}, machine(2), sched::Policy::kBackfill, {}, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInternal);
  EXPECT_THAT(r.error().message, HasSubstr("the scheduler started job 'b': GPU 0 is busy"));
}

TEST(SimulateErrors, AJobLeftWaitingOnAnIdleMachine) {
  SimOptions o;
  o.schedule = [](const sched::Snapshot& s) {
    sched::Decision d;
    for (const auto& p : s.queue) {
      if (p.gpus <= 1) {
        d.starts.push_back({p.id, {static_cast<int>(p.id % 2)}});
      } else {
        sched::WaitReason reason;
        reason.kind = sched::WaitReason::Kind::kNoGpuMemory;
        d.waits.push_back({p.id, reason});
      }
    }
    return d;
  };
  auto r = simulate({job("a", 1, 1), job("b", 2, 1), job("c", 1, 1, {"b"})}, machine(2),
                    sched::Policy::kBackfill, {}, o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("job 'b' can never start: "));
  EXPECT_THAT(r.error().message, HasSubstr("(1 other job waits on it or behind it)"));
}

TEST(Simulate, SameInputSameOutput) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 300; ++i) {
    SimJob j = job(fmt::format("j{}", i), 1 + (i * 7) % 4, 1 + (i * 13) % 50);
    j.priority = (i * 11) % 3 * 40 + 10;
    j.submit_ms = int64_t{(i * 17) % 40} * 1000;
    if (i % 5 == 4) j.after = {fmt::format("j{}", i - 3)};
    jobs.push_back(j);
  }
  for (auto policy : {sched::Policy::kFifo, sched::Policy::kPriority, sched::Policy::kBackfill}) {
    auto a = simulate(jobs, machine(6), policy);
    auto b = simulate(jobs, machine(6), policy);
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->jobs.size(), b->jobs.size());
    for (size_t i = 0; i < a->jobs.size(); ++i) {
      EXPECT_EQ(a->jobs[i].start_ms, b->jobs[i].start_ms);
      EXPECT_EQ(a->jobs[i].gpus, b->jobs[i].gpus);
    }
    EXPECT_EQ(a->makespan_ms, b->makespan_ms);
    EXPECT_EQ(a->mean_wait_s, b->mean_wait_s);
  }
}

// A reservation's GPU is free and its only job waits 200 deep behind jobs that hold the
// other GPUs back: the window grows to that job in one step (not by doubling, which passed
// the whole window again at each step), and the job starts at once.
TEST(Simulate, TheWindowReachesADeepJobOfAFreePoolInOneStep) {
  std::vector<SimJob> jobs;
  for (int i = 0; i < 200; ++i) jobs.push_back(job(fmt::format("wide-{}", i), 3, 3600));
  jobs.push_back(job("reserved", 1, 3600));
  jobs.back().reservation = "r";
  SimMachine m = machine(4);
  m.reservations = {sched::Reservation{"r", {3}}};
  auto r = simulate(jobs, m, sched::Policy::kPriority);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(row(*r, "reserved").start_ms, 0);
  // One pass per event but the last (nothing is left to start), and one more at time 0 to
  // reach the reserved job; doubling from the first window took four more.
  EXPECT_EQ(r->stats.passes, r->stats.events);
}

}  // namespace
}  // namespace gpuq::sim
