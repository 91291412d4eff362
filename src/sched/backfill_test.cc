// SPDX-License-Identifier: Apache-2.0
// Backfill rules, case by case: durations (estimate, timeout, unknown and its limit), running
// jobs without an expected end, resources a reservation does not need, conservative
// reservations for the first max_reservations waiting jobs, the cap (EASY past it), EASY's
// extra GPUs on named GPUs, backfill deep in a long queue, and sharing jobs' reservations
// (memory the sharers leave, whole GPUs).
#include <gtest/gtest.h>

#include "sched/case_table.h"

namespace gpuq::sched::testing {
namespace {

constexpr int64_t kNow = 9'000'000;
constexpr int64_t kMin = 60'000;

// Two GPUs; GPU 0 runs job 100 until `end_in` from now (0 = unknown end). Job 1 needs both.
Snapshot one_busy(int64_t end_in, std::vector<PendingJob> worse, int64_t limit = 0) {
  Snapshot s = machine(2);
  s.now_ms = kNow;
  s.running = {run(100).slots({0}).ends(end_in ? kNow + end_in : 0)};
  s.gpus[0].held_exclusive = true;
  s.queue = {job(1, 2)};
  s.queue.insert(s.queue.end(), worse.begin(), worse.end());
  s.backfill_unknown_limit_ms = limit;
  return s;
}

TEST(Backfill, Durations) {
  const int64_t hour = 60 * kMin;
  std::vector<Case> cases = {
      {"a timeout stands in for a missing estimate",
       one_busy(hour, {job(2, 1).timeout(30 * kMin)}),
       {2},
       {1}},
      {"a timeout past the reservation",
       one_busy(hour, {job(2, 1).timeout(90 * kMin)}),
       {},
       {1, 2},
       {},
       {{2, "would delay job 1, which starts in ~1h"}}},
      {"the estimate wins over the timeout",
       one_busy(hour, {job(2, 1).estimate(30 * kMin).timeout(5 * hour)}),
       {2},
       {1}},
      {"unknown length, limit 0: never in the way of a reservation",
       one_busy(hour, {job(2, 1)}),
       {},
       {1, 2},
       {},
       {{2, "would delay job 1, which starts in ~1h"}}},
      {"unknown length, the reservation starts past the limit",
       one_busy(hour, {job(2, 1)}, 30 * kMin),
       {2},
       {1}},
      {"unknown length, the reservation starts within the limit",
       one_busy(hour, {job(2, 1)}, 90 * kMin),
       {},
       {1, 2}},
      {"an overdue running job may end any moment",
       one_busy(-10 * kMin, {job(2, 1).estimate(kMin)}),
       {},
       {1, 2},
       {},
       {{1, "needs 2 GPUs, 1 free, next free in <1s"},
        {2, "would delay job 1, which starts in <1s"}}},
      {"a running job without an end: its reservation has no start, known work runs",
       one_busy(0, {job(2, 1).estimate(5 * hour)}),
       {2},
       {1},
       {},
       {{1, "needs 2 GPUs, 1 free"}}},
      {"a running job without an end: work of unknown length waits (limit 0)",
       one_busy(0, {job(2, 1)}),
       {},
       {1, 2},
       {},
       {{2, "behind 1 better job waiting for GPUs (needs 1)"}}},
      {"a running job without an end: work of unknown length runs past a limit",
       one_busy(0, {job(2, 1)}, 30 * kMin),
       {2},
       {1}},
  };
  for (const Case& c : cases) expect_case(c);
}

TEST(Backfill, ResourcesTheReservationDoesNotNeed) {
  // GPU 0 frees in an hour; GPU 2 has too little memory for job 1, which reserves {0, 1}:
  // long work may run on GPU 2 but not on GPU 1.
  Snapshot s = machine(3);
  s.now_ms = kNow;
  s.gpus[2].memory_total_mib = s.gpus[2].memory_free_mib = 40000;
  s.running = {run(100).slots({0}).ends(kNow + 60 * kMin)};
  s.gpus[0].held_exclusive = true;
  s.queue = {job(1, 2).mem(60000).estimate(60 * kMin), job(2, 1).estimate(300 * kMin),
             job(3, 1).estimate(300 * kMin)};
  expect_case({"long work on the GPU the reservation cannot use",
               s,
               {2},
               {1, 3},
               {{2, {2}}},
               {{1, "needs 2 GPUs with 60000 MiB free, 1 has it"},
                {3, "would delay job 1, which starts in ~1h"}}});
}

// Four GPUs: GPU 0 frees in 60 minutes, GPU 1 in 120. Job 1 needs all four (from 120), job 2
// three (from 60, on 0, 2 and 3: it ends before job 1 starts). Job 3 would end at 90, before
// job 1 but after job 2's start; job 4 ends at 50.
Snapshot conservative(int max_reservations) {
  Snapshot s = machine(4);
  s.now_ms = kNow;
  s.running = {run(100).slots({0}).ends(kNow + 60 * kMin),
               run(101).slots({1}).ends(kNow + 120 * kMin)};
  s.gpus[0].held_exclusive = s.gpus[1].held_exclusive = true;
  s.queue = {job(1, 4).estimate(60 * kMin), job(2, 3).estimate(60 * kMin),
             job(3, 1).estimate(90 * kMin), job(4, 1).estimate(50 * kMin)};
  s.max_reservations = max_reservations;
  return s;
}

TEST(Backfill, EveryWaitingJobGetsAReservation) {
  expect_case({"conservative: job 3 would delay job 2, not job 1",
               conservative(32),
               {4},
               {1, 2, 3},
               {},
               {{1, "needs 4 GPUs, 2 free, next free in ~2h"},
                {2, "needs 3 GPUs, 2 free, next free in ~1h"},
                {3, "would delay job 2, which starts in ~1h"}}});
  // Past the cap a job gets no reservation and holds nothing back (EASY with the cap at 1):
  // job 3 may delay job 2, never job 1.
  expect_case({"past the cap a job is not protected",
               conservative(1),
               {3, 4},
               {1, 2},
               {},
               {{1, "needs 4 GPUs, 2 free, next free in ~2h"}, {2, "needs 3 GPUs, 2 free"}}});
  Snapshot none = conservative(0);
  Decision backfill = schedule(none);
  none.policy = Policy::kPriority;
  Decision priority = schedule(none);
  EXPECT_EQ(started(backfill), started(priority));
  EXPECT_TRUE(started(backfill).empty());
}

// shared_by_two(): 10000 MiB free now, 40000 after an hour. Job 1 shares too and needs `mem`;
// jobs 2 and 3 share 10000 MiB for 90 and 60 minutes.
Snapshot sharers_leave(int64_t mem) {
  Snapshot s = shared_by_two(kNow);
  s.queue = {job(1, 1).share().mem(mem).estimate(30 * kMin),
             job(2, 1).share().mem(10000).estimate(90 * kMin),
             job(3, 1).share().mem(10000).estimate(60 * kMin)};
  return s;
}

TEST(Backfill, ASharingJobIsReservedWhenTheSharersLeaveItsMemory) {
  expect_case({"the memory left after an hour is exactly enough: reserved then",
               sharers_leave(40000),
               {3},
               {1, 2},
               {},
               {{1, "no GPU has 40000 MiB free"}, {2, "would delay job 1, which starts in ~1h"}}});
  expect_case({"one MiB more: reserved only when both sharers have ended; job 2 runs now",
               sharers_leave(40001),
               {2},
               {1, 3},
               {},
               {{3, "no GPU has 10000 MiB free"}}});
}

// Reservations hold whole GPUs, even for sharing jobs: GPU 0 is held until an hour from now,
// GPU 1 is shared by job 101 for two. Job 1 shares and needs both: it is reserved both from
// the hour on. Sharing jobs 2 (90 minutes) and 3 (60) could share GPU 1 now.
TEST(Backfill, ASharingJobsReservationHoldsItsGpusWhole) {
  Snapshot s = machine(2);
  s.now_ms = kNow;
  s.running = {run(100).slots({0}).ends(kNow + 60 * kMin),
               run(101).slots({1}).share(10000).ends(kNow + 120 * kMin)};
  s.gpus[0].held_exclusive = true;
  s.gpus[1].sharers = 1;
  s.gpus[1].memory_free_mib = 70000;
  s.queue = {job(1, 2).share().mem(10000).estimate(30 * kMin),
             job(2, 1).share().mem(10000).estimate(90 * kMin),
             job(3, 1).share().mem(10000).estimate(60 * kMin)};
  expect_case({"only the sharer that ends before the reservation joins GPU 1",
               s,
               {3},
               {1, 2},
               {{3, {1}}},
               {{1, "needs 2 GPUs, 1 free, next free in ~1h"},
                {2, "would delay job 1, which starts in ~1h"}}});
}

// EASY's rule on named GPUs. Four GPUs: 2 and 3 are busy for an hour, 0 and 1
// free. Job 1 needs three; EASY counts one "extra" GPU at its start, which a job running past
// it may take now. The reservation must name the busy GPUs first (2, 3, then 0), and a job
// that ends before it must take reserved GPU 0, leaving GPU 1 to the long job.
TEST(Backfill, TheReservationLeavesEasysExtraGpuFree) {
  Snapshot s = machine(4);
  s.now_ms = kNow;
  s.running = {run(100).slots({2, 3}).ends(kNow + 60 * kMin)};
  s.gpus[2].held_exclusive = s.gpus[3].held_exclusive = true;
  s.queue = {job(1, 3).estimate(60 * kMin), job(2, 1).estimate(30 * kMin),
             job(3, 1).estimate(500 * kMin)};
  expect_case({"short on the reserved GPU, long on the extra one",
               s,
               {2, 3},
               {1},
               {{2, {0}}, {3, {1}}},
               {{1, "needs 3 GPUs, 2 free, next free in ~1h"}}});
}

// Deep in a long queue: 40 waiting jobs of 2 GPUs each, then a 1-GPU job short enough to end
// before the head's reservation. Past the cap the waiting jobs hold nothing back, so it
// starts (once the 33rd waiting job held back every GPU, and it waited).
TEST(Backfill, AShortJobDeepInTheQueueBackfills) {
  Snapshot s = machine(2);
  s.now_ms = kNow;
  s.running = {run(100).slots({0}).ends(kNow + 60 * kMin)};
  s.gpus[0].held_exclusive = true;
  std::vector<int64_t> waits;
  for (int id = 1; id <= 40; ++id) {
    s.queue.push_back(job(id, 2).order(id).estimate(120 * kMin));
    waits.push_back(id);
  }
  s.queue.push_back(job(41, 1).order(41).estimate(30 * kMin));
  expect_case({"job 41 ends before job 1's reservation", s, {41}, waits, {{41, {1}}}});
}

}  // namespace
}  // namespace gpuq::sched::testing
