// SPDX-License-Identifier: Apache-2.0
// Order, policies, zero-GPU jobs, draining and the daemon's way of calling schedule().
#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sched/case_table.h"

namespace gpuq::sched::testing {
namespace {

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kMin = 60'000;

PendingJob job(int64_t id, int gpus, int priority = 50) {
  return testing::job(id, gpus).priority(priority);
}

Snapshot box(int gpus, std::vector<int> held = {}, Policy policy = Policy::kBackfill) {
  Snapshot s = machine(gpus);
  s.now_ms = kNow;
  for (int slot : held) s.gpus[slot].held_exclusive = true;
  s.policy = policy;
  return s;
}

// A running job on `slots` that ends `in_ms` from now (0 = unknown end).
Snapshot running(Snapshot s, int64_t id, std::vector<int> slots, int64_t in_ms) {
  s.running.push_back(run(id).slots(slots).ends(in_ms ? kNow + in_ms : 0));
  return s;
}

TEST(Schedule, OrderAndPolicies) {
  std::vector<Case> cases = {
      {"fifo within a priority",
       with_queue(box(2), {job(1, 1), job(2, 1), job(3, 1)}),
       {1, 2},
       {3}},
      {"priority before fifo", with_queue(box(1), {job(1, 1, 50), job(2, 1, 10)}), {2}, {1}},
      {"queue_order, not input order, is fifo",
       with_queue(box(1), {testing::job(1, 1).order(9), testing::job(2, 1).order(3)}),
       {2},
       {1}},
      {"kFifo ignores priority",
       with_queue(box(1, {}, Policy::kFifo), {job(1, 1, 90), job(2, 1, 10)}),
       {1},
       {2}},
      {"exact fit", with_queue(box(3), {job(1, 3), job(2, 1)}), {1}, {2}},
      {"nothing free",
       with_queue(box(1, {0}), {job(1, 1)}),
       {},
       {1},
       {},
       {{1, "needs 1 GPU, 0 free"}}},
      {"empty queue", with_queue(box(2), {}), {}, {}},
      {"a big job holds the free GPU against a smaller one (no estimates)",
       with_queue(box(2, {0}), {job(1, 2), job(2, 1)}),
       {},
       {1, 2},
       {},
       {{1, "needs 2 GPUs, 1 free"}, {2, "behind 1 better job waiting for GPUs (needs 1)"}}},
      {"a job that can never fit holds nothing back",
       with_queue(box(2), {job(1, 3), job(2, 1)}),
       {2},
       {1},
       {},
       {{1, "needs 3 GPUs, 2 free, only 2 usable"}}},
      {"unusable GPUs get nothing",
       [] {
         Snapshot s = box(3);
         s.gpus[0].usable = false;
         s.gpus[2].usable = false;
         return with_queue(s, {job(1, 1), job(2, 1)});
       }(),
       {1},
       {2},
       {{1, {1}}},
       {{2, "needs 1 GPU, 0 free"}}},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(Schedule, ZeroGpuJobsNeverWaitForGpus) {
  for (Policy policy : {Policy::kFifo, Policy::kPriority, Policy::kBackfill}) {
    expect_case({"zero-GPU jobs start beside blocked GPU jobs",
                 with_queue(box(1, {0}, policy), {job(1, 1, 10), job(2, 2, 10), job(3, 0, 90)}),
                 {3},
                 {1, 2}});
  }
  Snapshot s = box(0);
  s.queue = {job(1, 0), job(2, 0)};
  expect_case({"zero-GPU jobs on a machine without GPUs", s, {1, 2}, {}});
}

TEST(Schedule, BackfillVersusPriority) {
  // Job 1 needs both GPUs; GPU 0 frees in 60 minutes. Job 2 (one GPU, 30 minutes) fits
  // before that: backfill starts it, kPriority does not; job 3 (90 minutes) would delay 1.
  auto scenario = [](Policy policy) {
    Snapshot s = running(box(2, {}, policy), 100, {0}, 60 * kMin);
    s.queue = {job(1, 2), job(2, 1), job(3, 1)};
    s.queue[1].estimate_ms = 30 * kMin;
    s.queue[2].estimate_ms = 90 * kMin;
    return s;
  };
  expect_case({"backfill",
               scenario(Policy::kBackfill),
               {2},
               {1, 3},
               {{2, {1}}},
               {{1, "needs 2 GPUs, 1 free, next free in ~1h"},
                {3, "behind 1 better job waiting for GPUs (needs 1)"}}});
  Snapshot longer = scenario(Policy::kBackfill);
  longer.queue.erase(longer.queue.begin() + 1);
  expect_case({"backfill refuses a job that would delay the reservation",
               longer,
               {},
               {1, 3},
               {},
               {{3, "would delay job 1, which starts in ~1h"}}});
  expect_case({"kPriority holds the free GPU",
               scenario(Policy::kPriority),
               {},
               {1, 2, 3},
               {},
               {{1, "needs 2 GPUs, 1 free, next free in ~1h"},
                {2, "behind 1 better job waiting for GPUs (needs 1)"}}});
}

TEST(Schedule, DrainingStartsNothing) {
  Snapshot s = box(2);
  s.queue = {job(1, 0), job(2, 1)};
  s.draining = true;
  Decision d = schedule(s);
  EXPECT_TRUE(d.starts.empty());
  ASSERT_EQ(d.waits.size(), 2u);
  for (const Wait& w : d.waits) {
    EXPECT_EQ(w.reason.kind, WaitReason::Kind::kDraining);
    EXPECT_NE(w.reason.text(s).find("draining"), std::string::npos);
  }
}

TEST(Schedule, StartsGetDisjointLowestSlotsWhateverTheGpuOrder) {
  Snapshot s;
  for (int slot : {3, 1, 0, 2}) {
    Gpu gpu;
    gpu.slot = slot;
    s.gpus.push_back(gpu);
  }
  s.queue = {job(1, 2), job(2, 1), job(3, 1)};
  Decision d = schedule(s);
  EXPECT_EQ(check_decision(s, d), "");
  ASSERT_EQ(d.starts.size(), 3u);
  EXPECT_EQ(d.starts[0].slots, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.starts[1].slots, (std::vector<int>{2}));
  EXPECT_EQ(d.starts[2].slots, (std::vector<int>{3}));
}

// The daemon today fills only GPUs (held_exclusive, memory) and the queue: no running jobs,
// no estimates. Held GPUs then count as held forever; the reasons it greps for must hold.
TEST(Schedule, DaemonShapedSnapshot) {
  Snapshot s;
  s.now_ms = kNow;
  for (int slot = 0; slot < 2; ++slot) {
    Gpu gpu;
    gpu.slot = slot;
    gpu.memory_total_mib = gpu.memory_free_mib = 24000;
    s.gpus.push_back(gpu);
  }
  s.gpus[0].held_exclusive = true;
  s.gpus[0].memory_free_mib = 1000;
  s.queue = {testing::job(7, 2).order(3), testing::job(8, 1).order(4), testing::job(9, 0).order(5)};
  Decision d = schedule(s);
  EXPECT_EQ(started(d), (std::vector<int64_t>{9}));
  Snapshot rendered = s;
  rendered.queue.clear();  // the daemon renders reasons without the queue
  EXPECT_EQ(text_of(d, rendered, 7), "needs 2 GPUs, 1 free");
  EXPECT_EQ(text_of(d, rendered, 8), "behind 1 better job waiting for GPUs (needs 1)");
  s.gpus[0].held_exclusive = false;
  s.gpus[0].memory_free_mib = 24000;
  d = schedule(s);
  EXPECT_EQ(started(d), (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(slots_of(d, 7), (std::vector<int>{0, 1}));
}

TEST(Schedule, DecisionDoesNotDependOnInputOrder) {
  Snapshot s = running(box(4), 100, {0}, 30 * kMin);
  for (int i = 1; i <= 12; ++i) {
    s.queue.push_back(
        testing::job(i, 1 + i % 3).priority(10 * (i % 3)).order(i).estimate((i % 4) * 20 * kMin));
  }
  Decision expected = schedule(s);
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    std::shuffle(s.queue.begin(), s.queue.end(), rng);
    Decision d = schedule(s);
    EXPECT_EQ(started(d), started(expected));
    EXPECT_EQ(waiting(d), waiting(expected));
    for (const Start& st : expected.starts) EXPECT_EQ(slots_of(d, st.job_id), st.slots);
  }
}

TEST(Schedule, WideKeysStillSort) {
  Snapshot s = box(1);
  s.queue = {testing::job(1, 1).order(INT64_MAX), testing::job(2, 1).order(INT64_MIN),
             testing::job(3, 1).priority(-5)};
  Decision d = schedule(s);
  EXPECT_EQ(started(d), (std::vector<int64_t>{3}));
  EXPECT_EQ(waiting(d), (std::vector<int64_t>{2, 1}));
}

TEST(SortQueue, PriorityThenOrder) {
  std::vector<PendingJob> q = {job(1, 0, 90), job(2, 0, 10), job(3, 0, 10), job(4, 0, 50)};
  q[0].queue_order = 1;
  q[1].queue_order = 5;
  q[2].queue_order = 2;
  q[3].queue_order = 0;
  sort_queue(q);
  std::vector<int64_t> ids;
  for (const auto& j : q) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{3, 2, 4, 1}));
  sort_queue(q, Policy::kFifo);
  ids.clear();
  for (const auto& j : q) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{4, 1, 3, 2}));
}

}  // namespace
}  // namespace gpuq::sched::testing
