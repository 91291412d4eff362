// SPDX-License-Identifier: Apache-2.0
// Lanes: capacity counters, and exclusions between lanes and GPU work, in both directions
// and between jobs started in the same pass.
#include <gtest/gtest.h>

#include "sched/case_table.h"

namespace gpuq::sched::testing {
namespace {

constexpr int64_t kNow = 5'000'000;
constexpr int64_t kMin = 60'000;
constexpr int kNet = 0, kCpu = 1, kIo = 2, kOff = 3;

// net (1 unit) never overlaps GPU work; cpu has 2 units; io (1 unit) excludes cpu.
Snapshot lanes_box(int gpus, Policy policy = Policy::kBackfill) {
  Snapshot s = machine(gpus);
  s.now_ms = kNow;
  s.policy = policy;
  s.lanes = {lane("net", 1, {"gpu"}), lane("cpu", 2), lane("io", 1, {"cpu"}), lane("off", 0)};
  return s;
}

PendingJob on(int64_t id, int gpus, std::vector<int> lanes, int priority = 50) {
  return job(id, gpus).lanes(lanes).priority(priority);
}

Snapshot with_running(Snapshot s, RunningJob run) {
  if (run.expected_end_ms > 0) run.expected_end_ms += s.now_ms;
  for (int l : run.lanes) ++s.lanes[l].used;
  if (!run.slots.empty()) s.gpus[run.slots[0]].held_exclusive = true;
  s.running.push_back(run);
  return s;
}

TEST(Lanes, CapacityAndExclusions) {
  std::vector<Case> cases = {
      {"one net job at a time",
       with_queue(lanes_box(0), {on(1, 0, {kNet}), on(2, 0, {kNet})}),
       {1},
       {2},
       {},
       {{2, "lane net busy with job 1"}}},
      {"cpu has two units",
       with_queue(lanes_box(0), {on(1, 0, {kCpu}), on(2, 0, {kCpu}), on(3, 0, {kCpu})}),
       {1, 2},
       {3},
       {},
       {{3, "lane cpu busy with job 1"}}},
      {"a lane listed twice takes one unit",
       with_queue(lanes_box(0), {on(1, 0, {kCpu, kCpu}), on(2, 0, {kCpu})}),
       {1, 2},
       {}},
      {"a running holder with an expected end",
       with_queue(with_running(lanes_box(0), run(7).lanes({kNet}).ends(5 * kMin)),
                  {on(1, 0, {kNet})}),
       {},
       {1},
       {},
       {{1, "lane net busy with job 7, next free in ~5m"}}},
      {"a lane marked used without a running job named",
       [] {
         Snapshot s = lanes_box(0);
         s.lanes[kNet].used = 1;
         return with_queue(s, {on(1, 0, {kNet})});
       }(),
       {},
       {1},
       {},
       {{1, "lane net busy"}}},
      {"net waits while GPU work runs",
       [] {
         // Job 1 waits for GPU work that may never end; job 2 adds GPU work of known length.
         Snapshot s = with_running(lanes_box(2), run(12).slots({0}));
         s.queue = {on(1, 0, {kNet}), on(2, 1, {})};
         s.queue[1].estimate_ms = 10 * kMin;
         return s;
       }(),
       {2},
       {1},
       {},
       {{1, "lane net excluded while job 12 (GPU work) runs"}}},
      {"GPU work waits while net runs",
       with_queue(with_running(lanes_box(2), run(7).lanes({kNet})),
                  {on(1, 1, {}), on(2, 0, {kCpu})}),
       {2},
       {1},
       {},
       {{1, "GPU work excluded while job 7 (lane net) runs"}}},
      {"same pass: a GPU job started first keeps net out",
       with_queue(lanes_box(2), {on(1, 1, {}), on(2, 0, {kNet})}),
       {1},
       {2},
       {},
       {{2, "lane net excluded while job 1 (GPU work) runs"}}},
      {"same pass: a net job started first keeps GPU work out",
       with_queue(lanes_box(2), {on(1, 0, {kNet}, 10), on(2, 1, {}), on(3, 2, {})}),
       {1},
       {2, 3},
       {},
       {{2, "GPU work excluded while job 1 (lane net) runs"}}},
      {"a lane excluding another lane, both ways",
       with_queue(with_running(lanes_box(0), run(5).lanes({kCpu})), {on(1, 0, {kIo})}),
       {},
       {1},
       {},
       {{1, "lane io excluded while job 5 (lane cpu) runs"}}},
      {"the other way",
       with_queue(with_running(lanes_box(0), run(5).lanes({kIo})), {on(1, 0, {kCpu})}),
       {},
       {1},
       {},
       {{1, "lane cpu excluded while job 5 (lane io) runs"}}},
      {"jobs that can never run hold nothing back",
       with_queue(lanes_box(1), {on(1, 0, {9}), on(2, 0, {kOff}), on(3, 1, {kNet}), on(4, 1, {})}),
       {4},
       {1, 2, 3},
       {},
       {{1, "lane #9 does not exist"},
        {2, "lane off has no capacity"},
        {3, "lane net and GPU work exclude each other, and it needs both"}}},
      {"a GPU job on a lane without capacity holds no GPU back, even from work of unknown length",
       with_queue(lanes_box(1), {on(1, 1, {kOff}), on(2, 1, {})}),
       {2},
       {1},
       {},
       {{1, "lane off has no capacity"}}},
  };
  for (const Case& c : cases) expect_case(c);
}

// Job 1 needs a GPU and the one cpu unit left... after the running cpu job ends in an hour.
// Job 2 downloads (net, which excludes GPU work) for `minutes`.
Snapshot download_beside_waiting_gpu_job(Policy policy, int64_t minutes) {
  Snapshot s = lanes_box(1, policy);
  s.lanes[kCpu].capacity = 1;
  s = with_running(s, run(5).lanes({kCpu}).ends(60 * kMin));
  s.queue = {on(1, 1, {kCpu}), on(2, 0, {kNet})};
  s.queue[1].estimate_ms = minutes * kMin;
  return s;
}

TEST(Lanes, WaitingJobsHoldBackWhatWouldDelayThem) {
  std::vector<Case> cases = {
      {"kPriority: a download would delay the waiting GPU job",
       download_beside_waiting_gpu_job(Policy::kPriority, 30),
       {},
       {1, 2},
       {},
       {{1, "lane cpu busy with job 5, next free in ~1h"},
        {2, "behind 1 better job that lane net would delay"}}},
      {"backfill: a download that ends first may run",
       download_beside_waiting_gpu_job(Policy::kBackfill, 30),
       {2},
       {1}},
      {"backfill: a download that would not end first waits",
       download_beside_waiting_gpu_job(Policy::kBackfill, 90),
       {},
       {1, 2},
       {},
       {{2, "would delay job 1, which starts in ~1h"}}},
  };
  // Job 1 needs the held GPU and a cpu unit: it holds one of the two cpu units back.
  auto unit_held_back = [](Policy policy, int64_t estimate) {
    Snapshot s = with_running(lanes_box(1, policy), run(5).lanes({kCpu}).ends(0));
    s.gpus[0].held_exclusive = true;
    s.queue = {on(1, 1, {kCpu}), on(2, 0, {kCpu})};
    s.queue[1].estimate_ms = estimate;
    return s;
  };
  cases.push_back({"kPriority: the last cpu unit is held for the better job",
                   unit_held_back(Policy::kPriority, 10 * kMin),
                   {},
                   {1, 2},
                   {},
                   {{2, "behind 1 better job that lane cpu would delay"}}});
  cases.push_back({"backfill: its reservation has no start time, so work of known length runs",
                   unit_held_back(Policy::kBackfill, 10 * kMin),
                   {2},
                   {1}});
  cases.push_back({"backfill: work of unknown length does not",
                   unit_held_back(Policy::kBackfill, 0),
                   {},
                   {1, 2},
                   {},
                   {{2, "behind 1 better job that lane cpu would delay"}}});
  for (const Case& c : cases) expect_case(c);
}

}  // namespace
}  // namespace gpuq::sched::testing
