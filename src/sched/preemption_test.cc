// SPDX-License-Identifier: Apache-2.0
// Preemption planning: who preempts (first in line for GPUs, better by the gap and not one
// less), whom (modes, restart windows, least loss, pools, usable GPUs, memory, sharers,
// phantom holders), how many (greedy then pruned), and the promises that keep one preemption
// in flight per GPU (and that a job which needs no victim makes none). The
// decisions come from schedule() on each snapshot, so the wait reasons are real.
#include "sched/preemption.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sched/case_table.h"

namespace gpuq::sched::testing {
namespace {

constexpr int64_t kMin = 60'000;
constexpr int64_t kNow = 1000 * kMin;

using Kind = WaitReason::Kind;

// victim(100).on({0}).priority(90): a running job that may be preempted. By default it
// yields, started 30 minutes ago and is expected to end in an hour.
class VictimBuilder {
 public:
  explicit VictimBuilder(int64_t id) {
    run_.id = id;
    run_.priority = 90;
    run_.preempt = PreemptMode::kYield;
    run_.started_at_ms = kNow - 30 * kMin;
    run_.expected_end_ms = kNow + 60 * kMin;
  }
  VictimBuilder& on(std::vector<int> slots) { return run_.slots = std::move(slots), *this; }
  VictimBuilder& priority(int p) { return run_.priority = p, *this; }
  VictimBuilder& never() { return run_.preempt = PreemptMode::kNever, *this; }
  VictimBuilder& restart(int64_t within_ms) {
    run_.preempt = PreemptMode::kRestart;
    run_.restart_within_ms = within_ms;
    return *this;
  }
  VictimBuilder& age(int64_t ms) { return run_.started_at_ms = kNow - ms, *this; }
  VictimBuilder& ends_in(int64_t ms) { return run_.expected_end_ms = kNow + ms, *this; }
  VictimBuilder& unknown_end() { return run_.expected_end_ms = 0, *this; }
  VictimBuilder& share(int64_t mib) { return run_.share = true, run_.gpu_mem_mib = mib, *this; }
  VictimBuilder& lanes(std::vector<int> l) { return run_.lanes = std::move(l), *this; }
  VictimBuilder& in_flight_for(int64_t job) { return run_.preempted_by = job, *this; }
  operator RunningJob() const { return run_; }

 private:
  RunningJob run_;
};
VictimBuilder victim(int64_t id) { return VictimBuilder(id); }

PendingJob want(int64_t id, int gpus, int priority = 10) {
  return job(id, gpus).priority(priority).order(id);
}

// A machine of `gpus` GPUs with these runs on it, marked busy the way the daemon marks them
// (held_exclusive, sharers, memory, lane units), and this queue.
Snapshot box(int gpus, std::vector<RunningJob> runs, std::vector<PendingJob> queue) {
  Snapshot s = machine(gpus);
  s.now_ms = kNow;
  for (const RunningJob& r : runs) {
    for (int slot : r.slots) {
      Gpu& gpu = s.gpus[slot];
      if (r.share) {
        ++gpu.sharers;
        gpu.memory_free_mib -= r.gpu_mem_mib;
      } else {
        gpu.held_exclusive = true;
        gpu.memory_free_mib = 1000;
      }
    }
  }
  s.running = std::move(runs);
  s.queue = std::move(queue);
  return s;
}

template <typename F>
Snapshot edit(Snapshot s, F f) {
  f(s);
  return s;
}

struct PreemptCase {
  std::string name;
  Snapshot snapshot;
  std::vector<std::pair<int64_t, int64_t>> expected;  // (victim, by), in output order
  std::map<int64_t, Kind> kinds{};  // the scenario's wait reasons, as schedule() gives them
  PreemptionPolicy policy{};
};

void expect_preemptions(const PreemptCase& c) {
  SCOPED_TRACE(c.name);
  const Decision d = schedule(c.snapshot);
  ASSERT_EQ(check_decision(c.snapshot, d), "");
  for (const auto& [job, kind] : c.kinds) {
    const WaitReason* why = reason_of(d, job);
    ASSERT_NE(why, nullptr) << "job " << job << " started";
    EXPECT_EQ(why->kind, kind) << "job " << job << ": " << why->text(c.snapshot);
  }
  const std::vector<Preemption> got = plan_preemptions(c.snapshot, d, c.policy);
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (const Preemption& p : got) {
    pairs.emplace_back(p.victim, p.by);
    for (const RunningJob& r : c.snapshot.running) {
      if (r.id == p.victim) {
        EXPECT_EQ(p.slots, r.slots) << "victim " << p.victim;
      }
    }
  }
  EXPECT_EQ(pairs, c.expected) << describe(c.snapshot);
}

using None = std::vector<std::pair<int64_t, int64_t>>;

TEST(Preemption, GapAndModes) {
  std::vector<PreemptCase> cases = {
      {"gap not met (50 - 20 < 40)",
       box(1, {victim(100).on({0}).priority(50)}, {want(1, 1, 20)}),
       None{},
       {{1, Kind::kNeedsGpus}}},
      {"gap met exactly: the yielding run is chosen",
       box(1, {victim(100).on({0}).priority(50)}, {want(1, 1, 10)}),
       {{100, 1}},
       {{1, Kind::kNeedsGpus}}},
      {"a custom gap",
       box(1, {victim(100).on({0}).priority(50)}, {want(1, 1, 30)}),
       {{100, 1}},
       {},
       {.gap = 20}},
      {"a gap below 1 counts as 1: equal priority never preempts",
       box(1, {victim(100).on({0}).priority(50)}, {want(1, 1, 50)}),
       None{},
       {},
       {.gap = 0}},
      {"one short of the gap does not count beside a victim at the gap (2 GPUs needed)",
       box(2, {victim(100).on({0}).priority(50), victim(101).on({1}).priority(49)},
           {want(1, 2, 10)}),
       None{},
       {{1, Kind::kNeedsGpus}}},
      {"... and two victims at the gap are both stopped",
       box(2, {victim(100).on({0}).priority(50), victim(101).on({1}).priority(50)},
           {want(1, 2, 10)}),
       {{101, 1}, {100, 1}}},
      {"a custom gap: 19 short of 20 beside 20",
       box(2, {victim(100).on({0}).priority(50), victim(101).on({1}).priority(49)},
           {want(1, 2, 30)}),
       None{},
       {},
       {.gap = 20}},
      {"gap 0, one better: preempts",
       box(1, {victim(100).on({0}).priority(51)}, {want(1, 1, 50)}),
       {{100, 1}},
       {},
       {.gap = 0}},
      {"never is untouchable", box(1, {victim(100).on({0}).never()}, {want(1, 1)}), None{}},
      {"restart without a window: always",
       box(1, {victim(100).on({0}).restart(0).age(100 * 60 * kMin)}, {want(1, 1)}),
       {{100, 1}}},
      {"restart window open: age 10m < 10m + 1ms",
       box(1, {victim(100).on({0}).restart(10 * kMin + 1).age(10 * kMin)}, {want(1, 1)}),
       {{100, 1}}},
      {"restart window closed at the boundary: age 10m == window",
       box(1, {victim(100).on({0}).restart(10 * kMin).age(10 * kMin)}, {want(1, 1)}), None{}},
      {"restart window closed: age 10m > 10m - 1ms",
       box(1, {victim(100).on({0}).restart(10 * kMin - 1).age(10 * kMin)}, {want(1, 1)}), None{}},
  };
  for (const PreemptCase& c : cases) expect_preemptions(c);
}

TEST(Preemption, LeastLossAndHowMany) {
  std::vector<PreemptCase> cases = {
      {"worst priority first (not the lowest id)",
       box(2, {victim(100).on({1}).priority(90), victim(101).on({0}).priority(60)}, {want(1, 1)}),
       {{100, 1}}},
      {"youngest among equals",
       box(2, {victim(100).on({0}).age(2 * 60 * kMin), victim(101).on({1}).age(10 * kMin)},
           {want(1, 1)}),
       {{101, 1}}},
      {"youngest among equals, whatever the id",
       box(2, {victim(100).on({0}).age(10 * kMin), victim(101).on({1}).age(2 * 60 * kMin)},
           {want(1, 1)}),
       {{100, 1}}},
      {"same priority and start: higher id",
       box(2, {victim(100).on({0}), victim(101).on({1})}, {want(1, 1)}),
       {{101, 1}}},
      {"a 2-GPU job needs two victims; the one inside the gap is spared",
       box(3,
           {victim(100).on({0}).age(2 * 60 * kMin), victim(101).on({1}).priority(80),
            victim(102).on({2}).priority(20)},
           {want(1, 2)}),
       {{100, 1}, {101, 1}},
       {{1, Kind::kNeedsGpus}}},
      {"one victim holding two GPUs is enough",
       box(3, {victim(100).on({0, 1}), victim(101).on({2}).priority(80)}, {want(1, 2)}),
       {{100, 1}}},
      {"pruning: a free GPU plus two candidates where the second alone suffices",
       box(4, {victim(100).on({1}), victim(101).on({2, 3}).priority(80)}, {want(1, 3)}),
       {{101, 1}},
       {{1, Kind::kNeedsGpus}}},
      {"all candidates together are not enough: nothing is stopped",
       box(2, {victim(100).on({0}), victim(101).on({1}).never()}, {want(1, 2)}), None{}},
  };
  for (const PreemptCase& c : cases) expect_preemptions(c);
}

TEST(Preemption, SharersAndPhantomHolders) {
  std::vector<PreemptCase> cases = {
      {"sharers on one GPU must all be victims: one never yields",
       box(1, {victim(100).on({0}).share(20000), victim(101).on({0}).share(20000).never()},
           {want(1, 1)}),
       None{}},
      {"sharers on one GPU must all be victims: one inside the gap",
       box(1, {victim(100).on({0}).share(20000), victim(101).on({0}).share(20000).priority(40)},
           {want(1, 1)}),
       None{}},
      {"both sharers may go: both are chosen",
       box(1, {victim(100).on({0}).share(20000), victim(101).on({0}).share(20000)}, {want(1, 1)}),
       {{101, 1}, {100, 1}}},
      {"pruning among sharers: the victim that frees a GPU alone stays",
       box(3, {victim(100).on({1}).share(20000), victim(101).on({1, 2}).share(20000).priority(80)},
           {want(1, 2)}),
       {{101, 1}}},
      {"no GPU memory for a sharing job: its sharer host is freed",
       box(1, {victim(100).on({0}).share(60000)}, {job(1, 1).priority(10).share().mem(50000)}),
       {{100, 1}},
       {{1, Kind::kNoGpuMemory}}},
      {"held_exclusive without a RunningJob is never freeable",
       edit(box(2, {victim(100).on({1})}, {want(1, 2)}),
            [](Snapshot& s) { s.gpus[0].held_exclusive = true; }),
       None{}},
      {"... but the other GPU still is",
       edit(box(2, {victim(100).on({1})}, {want(1, 1)}),
            [](Snapshot& s) { s.gpus[0].held_exclusive = true; }),
       {{100, 1}}},
      {"more sharers than sharing runs listed: never freeable",
       edit(box(1, {victim(100).on({0}).share(20000)}, {want(1, 1)}),
            [](Snapshot& s) { ++s.gpus[0].sharers; }),
       None{}},
  };
  for (const PreemptCase& c : cases) expect_preemptions(c);
}

TEST(Preemption, InFlight) {
  std::vector<PreemptCase> cases = {
      {"a victim in flight is not chosen again, its GPU not given to another job",
       box(2,
           {victim(100).on({0}).in_flight_for(7).ends_in(kMin), victim(101).on({1}).priority(80)},
           {want(7, 1), want(1, 1)}),
       {{101, 1}},
       {{7, Kind::kNeedsGpus}, {1, Kind::kNeedsGpus}}},
      {"the GPU promised to job 7 does not count for a 2-GPU job",
       box(2, {victim(100).on({0}).in_flight_for(7).ends_in(kMin), victim(101).on({1})},
           {want(1, 2)}),
       None{},
       {{1, Kind::kNeedsGpus}}},
      {"a job with a preemption in flight waits for it",
       box(2, {victim(100).on({0}).in_flight_for(1).ends_in(kMin), victim(101).on({1})},
           {want(1, 1)}),
       None{},
       {{1, Kind::kNeedsGpus}}},
  };
  for (const PreemptCase& c : cases) expect_preemptions(c);
}

// GPU 0 runs nothing but shows only 1000 MiB free (a process the probe has not yet called
// foreign); GPU 1 runs a victim. Job 1 needs 50000 MiB: GPU 0 is freeable for it (its total
// is enough), so it stops nothing and promises nothing. Job 2 needs both GPUs and may still
// count GPU 0.
TEST(Preemption, AJobWithEnoughFreeableGpusPromisesNone) {
  Snapshot s = box(2, {victim(100).on({1})},
                   {job(1, 1).priority(10).order(1).mem(50000).estimate(30 * kMin),
                    job(2, 2).priority(10).order(2)});
  s.gpus[0].memory_free_mib = 1000;
  expect_preemptions({"the next job counts the GPU the first did not need to free",
                      s,
                      {{100, 2}},
                      {{1, Kind::kNoGpuMemory}, {2, Kind::kNeedsGpus}}});
}

TEST(Preemption, SeveralWaitingJobs) {
  // Each job estimated, so that later jobs get a finite reservation and wait "for GPUs".
  auto est = [](int64_t id, int gpus) {
    return job(id, gpus).priority(10).order(id).estimate(30 * kMin);
  };
  std::vector<PreemptCase> cases = {
      {"two better jobs each get a different victim",
       box(2, {victim(100).on({0}), victim(101).on({1}).priority(80).ends_in(120 * kMin)},
           {want(1, 1), want(2, 1)}),
       {{100, 1}, {101, 2}},
       {{1, Kind::kNeedsGpus}, {2, Kind::kNeedsGpus}}},
      {"a victim chosen for one job is no candidate for the next",
       box(1, {victim(100).on({0})}, {est(1, 1), est(2, 1)}),
       {{100, 1}},
       {{1, Kind::kNeedsGpus}, {2, Kind::kNeedsGpus}}},
      {"GPUs counted for one job are promised: a free one is not counted again",
       box(3, {victim(100).on({1}), victim(101).on({2})}, {est(1, 2), est(2, 2)}),
       {{101, 1}},
       {{1, Kind::kNeedsGpus}, {2, Kind::kNeedsGpus}}},
      {"a victim serves one job, even where it also holds the next job's GPU",
       edit(box(2, {victim(100).on({0, 1})},
                {want(1, 1), job(2, 1).priority(10).order(2).reservation(0)}),
            [](Snapshot& s) { s.reservations = {reservation("grp", {1})}; }),
       {{100, 1}},
       {{1, Kind::kNeedsGpus}, {2, Kind::kReservation}}},
      {"jobs behind a better job for the same GPUs do not preempt",
       box(2, {victim(100).on({0}).unknown_end(), victim(101).on({1}).unknown_end()},
           {want(1, 1), want(2, 1)}),
       {{101, 1}},
       {{1, Kind::kNeedsGpus}, {2, Kind::kBehindBetterJobs}}},
      {"max_preemptors 3: every job gets the youngest run left",
       box(3,
           {victim(100).on({0}).age(180 * kMin),
            victim(101).on({1}).age(120 * kMin).ends_in(120 * kMin),
            victim(102).on({2}).age(60 * kMin).ends_in(180 * kMin)},
           {est(1, 1), est(2, 1), est(3, 1)}),
       {{102, 1}, {101, 2}, {100, 3}},
       {{1, Kind::kNeedsGpus}, {2, Kind::kNeedsGpus}, {3, Kind::kNeedsGpus}},
       {.max_preemptors = 3}},
      {"max_preemptors 2: the third job is not examined",
       box(3,
           {victim(100).on({0}).age(180 * kMin),
            victim(101).on({1}).age(120 * kMin).ends_in(120 * kMin),
            victim(102).on({2}).age(60 * kMin).ends_in(180 * kMin)},
           {est(1, 1), est(2, 1), est(3, 1)}),
       {{102, 1}, {101, 2}},
       {},
       {.max_preemptors = 2}},
      {"max_preemptors 0: nothing",
       box(1, {victim(100).on({0})}, {want(1, 1)}),
       None{},
       {},
       {.max_preemptors = 0}},
  };
  for (const PreemptCase& c : cases) expect_preemptions(c);
}

TEST(Preemption, LanesDrainingPoolsUsableMemory) {
  Snapshot laned =
      box(2, {victim(100).on({0}), victim(101).on({1}).ends_in(120 * kMin)},
          {job(1, 1).priority(10).order(1).lanes({0}).estimate(30 * kMin), want(2, 1)});
  laned.lanes = {lane("net", 1)};
  laned.lanes[0].used = 1;
  laned.running.push_back(victim(200).lanes({0}).ends_in(10 * kMin));

  Snapshot reserved = box(2, {victim(100).on({0}).priority(95), victim(101).on({1})},
                          {job(1, 1).priority(10).order(1).reservation(0), want(2, 1)});
  reserved.reservations = {reservation("grp", {1})};

  auto unusable0 = [](Snapshot& s) { s.gpus[0].usable = false; };
  std::vector<PreemptCase> cases = {
      {"a job waiting on a lane does not preempt, nor count as examined",
       laned,
       {{101, 2}},
       {{1, Kind::kLaneBusy}, {2, Kind::kNeedsGpus}},
       {.max_preemptors = 1}},
      {"draining: nothing",
       edit(box(1, {victim(100).on({0})}, {want(1, 1)}), [](Snapshot& s) { s.draining = true; }),
       None{},
       {{1, Kind::kDraining}}},
      {"fifo: nothing (priorities do not order that queue)",
       edit(box(1, {victim(100).on({0})}, {want(1, 1)}), [](Snapshot& s) { s.policy = Policy::kFifo; }),
       None{},
       {{1, Kind::kNeedsGpus}}},
      {"a reservation's job preempts only inside it; others only outside",
       reserved,
       {{101, 1}, {100, 2}},
       {{1, Kind::kReservation}, {2, Kind::kNeedsGpus}}},
      {"a victim on an unusable GPU only is no candidate",
       edit(box(2, {victim(100).on({0}), victim(101).on({1}).priority(60)}, {want(1, 1)}),
            unusable0),
       {{101, 1}}},
      {"an unusable GPU never counts: 2 GPUs from 1 usable is impossible",
       edit(box(2, {victim(100).on({0}), victim(101).on({1}).priority(60)}, {want(1, 2)}),
            unusable0),
       None{}},
      {"a victim holding an unusable and a usable GPU frees the usable one",
       edit(box(2, {victim(100).on({0, 1})}, {want(1, 1)}), unusable0),
       {{100, 1}}},
      {"a GPU with exactly the memory counts",
       edit(box(1, {victim(100).on({0})}, {job(1, 1).priority(10).mem(60000)}),
            [](Snapshot& s) { s.gpus[0].memory_total_mib = 60000; }),
       {{100, 1}}},
      {"GPUs without the memory never count",
       edit(box(2, {victim(100).on({0}).priority(95), victim(101).on({1})},
                {job(1, 1).priority(10).mem(60000)}),
            [](Snapshot& s) { s.gpus[0].memory_total_mib = 40000; }),
       {{101, 1}},
       {{1, Kind::kNeedsGpus}}},
      {"a job that can never run here preempts nothing (foreign memory use)",
       edit(box(1, {victim(100).on({0}).share(10000)}, {job(1, 1).priority(10).mem(50000)}),
            [](Snapshot& s) { s.gpus[0].memory_free_mib = 10000; }),
       None{},
       {{1, Kind::kNoGpuMemory}}},
  };
  for (const PreemptCase& c : cases) expect_preemptions(c);
}

// A deep queue: the examined jobs are found wherever they sit in Snapshot::queue (here at
// its very end), and the bound holds there too.
TEST(Preemption, DeepQueue) {
  std::vector<PendingJob> queue;
  constexpr int kDeep = 100'000;
  for (int i = kDeep; i >= 1; --i) queue.push_back(job(i, 1).priority(i <= 2 ? 10 : 60).order(i));
  Snapshot s = box(2, {victim(100'001).on({0}), victim(100'002).on({1}).ends_in(120 * kMin)},
                   std::move(queue));
  const Decision d = schedule(s);
  ASSERT_EQ(d.waits.size(), static_cast<size_t>(kDeep));
  EXPECT_EQ(d.waits[0].job_id, 1);
  const std::vector<Preemption> got = plan_preemptions(s, d, {});
  ASSERT_EQ(got.size(), 2u);  // equal priority and start: the higher id goes first
  EXPECT_EQ(got[0].victim, 100'002);
  EXPECT_EQ(got[0].by, 1);
  EXPECT_EQ(got[1].victim, 100'001);
  EXPECT_EQ(got[1].by, 2);
  const std::vector<Preemption> one = plan_preemptions(s, d, {.max_preemptors = 1});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].victim, 100'002);
  EXPECT_EQ(one[0].by, 1);
}

}  // namespace
}  // namespace gpuq::sched::testing
