// SPDX-License-Identifier: Apache-2.0
// The window (window.h) must never change a decision: a simulation that hands each pass only
// a proven-sufficient prefix of the queue must equal one that hands over the whole queue, for
// every policy, with sched's scheduler and with a double that really backfills.
#include "sim/window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "sim/simulate.h"
#include "sim/testing/easy_backfill.h"

namespace gpuq::sim {
namespace {

std::vector<SimJob> random_plan(uint32_t seed, int count, int max_gpus) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<SimJob> jobs;
  for (int i = 0; i < count; ++i) {
    SimJob j;
    j.name = "j" + std::to_string(i);
    j.gpus = pick(1, max_gpus);
    j.priority = pick(0, 2) * 40 + 10;
    j.submit_ms = pick(0, 3) == 0 ? 0 : pick(0, 600) * 1000;
    j.duration_ms = pick(1, 120) * int64_t{1000};
    switch (pick(0, 3)) {
      case 0:
        j.estimate_ms = j.duration_ms;
        break;
      case 1:
        j.estimate_ms = j.duration_ms * 2;
        break;  // pessimistic
      case 2:
        j.estimate_ms = j.duration_ms / 2 + 1;
        break;  // optimistic: runs overrun
      default:
        j.estimate_ms = pick(0, 1) ? 0 : j.duration_ms;  // sometimes unknown
    }
    if (i > 3 && pick(0, 5) == 0) j.after = {"j" + std::to_string(pick(0, i - 1))};
    jobs.push_back(j);
  }
  return jobs;
}

struct Scheduler {
  const char* name;
  ScheduleFn fn;
  int max_reservations;
};

void expect_same(const SimResult& full, const SimResult& windowed, const std::string& what) {
  ASSERT_EQ(full.jobs.size(), windowed.jobs.size()) << what;
  for (size_t i = 0; i < full.jobs.size(); ++i) {
    ASSERT_EQ(full.jobs[i].start_ms, windowed.jobs[i].start_ms)
        << what << " job " << full.jobs[i].name;
    ASSERT_EQ(full.jobs[i].gpus, windowed.jobs[i].gpus) << what << " job " << full.jobs[i].name;
  }
  EXPECT_EQ(full.makespan_ms, windowed.makespan_ms) << what;
}

TEST(Window, NeverChangesADecision) {
  // The double reserves for one job only and never holds back (it does not follow the cap of
  // scheduler.h): an unlimited cap tells the window so, which tests P1-P3 against deep backfill.
  std::vector<Scheduler> schedulers = {
      {"sched", &sched::schedule, sched::Snapshot().max_reservations},
      {"sched-cap-2", &sched::schedule, 2},
      {"easy-backfill", &testing::easy_backfill, 1 << 30}};
  int64_t passed_full = 0, passed_windowed = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    auto jobs = random_plan(seed, 150, seed % 2 ? 4 : 8);
    std::vector<SimRunning> running = {{"warm", {0, 1}, 45000, {}}};
    for (const auto& s : schedulers) {
      SimMachine m;
      m.gpus = 8;
      m.max_reservations = s.max_reservations;
      for (auto policy :
           {sched::Policy::kFifo, sched::Policy::kPriority, sched::Policy::kBackfill}) {
        SimOptions full, windowed;
        full.schedule = windowed.schedule = s.fn;
        full.full_queue = true;
        windowed.initial_window = seed % 3 == 0 ? 0 : seed % 3;  // tiny windows exercise the proof
        std::string what = std::string(s.name) + " policy " +
                           std::to_string(static_cast<int>(policy)) + " seed " +
                           std::to_string(seed);
        auto a = simulate(jobs, m, policy, running, full);
        auto b = simulate(jobs, m, policy, running, windowed);
        ASSERT_TRUE(a) << a.error().message;
        ASSERT_TRUE(b) << b.error().message;
        expect_same(*a, *b, what);
        EXPECT_EQ(b->stats.capped_passes, 0);
        passed_full += a->stats.jobs_passed;
        passed_windowed += b->stats.jobs_passed;
      }
    }
  }
  EXPECT_LT(passed_windowed, passed_full / 2) << "the window should save work";
}

// Lanes, a reservation, memory and sharing: the classes of the proof (P2, P4 per pool/lane).
std::vector<SimJob> rich_plan(uint32_t seed, int count, int64_t submit_spread_s) {
  auto jobs = random_plan(seed, count, 4);
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (SimJob& j : jobs) {
    j.submit_ms = j.submit_ms * submit_spread_s / 600;
    switch (pick(0, 7)) {
      case 0:
        j.lanes = {"net"};
        j.gpus = pick(0, 1);
        break;
      case 1:
        j.lanes = {"cpu"};
        break;
      case 2:
        j.reservation = "evals";
        j.gpus = pick(1, 2);
        break;
      case 3:
        j.share = true;
        j.gpu_mem_mib = pick(1, 4) * int64_t{10000};
        j.gpus = 1;
        break;
      case 4:
        j.gpu_mem_mib = 20000;
        break;
      default:
        break;
    }
  }
  return jobs;
}

SimMachine rich_machine(int max_reservations) {
  SimMachine m;
  m.gpus = 8;
  m.lanes = {sched::Lane{"net", 1, 0, {}}, sched::Lane{"cpu", 2, 0, {}}};
  m.reservations = {sched::Reservation{"evals", {6, 7}}};
  m.gpu_memory_mib = 40000;
  m.max_reservations = max_reservations;
  return m;
}

TEST(Window, NeverChangesADecisionWithLanesReservationsAndSharing) {
  for (uint32_t seed = 21; seed <= 30; ++seed) {
    auto jobs = rich_plan(seed, 160, 600);
    SimMachine m = rich_machine(seed % 2 ? 3 : 32);
    for (auto policy : {sched::Policy::kFifo, sched::Policy::kPriority, sched::Policy::kBackfill}) {
      SimOptions full, windowed;
      full.full_queue = true;
      windowed.initial_window = seed % 3 + 1;
      std::string what =
          "policy " + std::to_string(static_cast<int>(policy)) + " seed " + std::to_string(seed);
      auto a = simulate(jobs, m, policy, {}, full);
      auto b = simulate(jobs, m, policy, {}, windowed);
      ASSERT_TRUE(a) << a.error().message;
      ASSERT_TRUE(b) << b.error().message;
      expect_same(*a, *b, what);
    }
  }
}

TEST(Window, SavesWorkOnALongQueue) {
  auto jobs = random_plan(5, 3000, 8);
  for (SimJob& j : jobs) j.submit_ms = 0;
  SimMachine m;
  m.gpus = 16;
  for (auto policy : {sched::Policy::kFifo, sched::Policy::kPriority, sched::Policy::kBackfill}) {
    SimOptions full;
    full.full_queue = true;
    auto a = simulate(jobs, m, policy, {}, full);
    auto b = simulate(jobs, m, policy);
    ASSERT_TRUE(a && b);
    expect_same(*a, *b, "policy " + std::to_string(static_cast<int>(policy)));
    // Backfill (EASY: jobs past the head hold nothing back) really starts short jobs deep in
    // the queue, so its window must reach them: less saved, but never more work.
    if (policy == sched::Policy::kBackfill) {
      EXPECT_LT(b->stats.jobs_passed, a->stats.jobs_passed);
    } else {
      EXPECT_LT(b->stats.jobs_passed, a->stats.jobs_passed / 20);
    }
  }
}

TEST(Window, SavesWorkOnALongRichQueue) {
  auto jobs = rich_plan(5, 1500, 0);  // all queued at once
  for (auto policy : {sched::Policy::kPriority, sched::Policy::kBackfill}) {
    SimOptions full;
    full.full_queue = true;
    auto a = simulate(jobs, rich_machine(8), policy, {}, full);
    auto b = simulate(jobs, rich_machine(8), policy);
    ASSERT_TRUE(a && b);
    expect_same(*a, *b, "policy " + std::to_string(static_cast<int>(policy)));
    // Not tenfold as with one pool: whenever the reserved GPUs are free, the window must reach
    // the first job of that reservation, wherever it waits in the queue; under backfill also
    // every short job that fits before the head's reservation (see SavesWorkOnALongQueue).
    EXPECT_LE(b->stats.jobs_passed,
              a->stats.jobs_passed / (policy == sched::Policy::kBackfill ? 1 : 2));
  }
}

TEST(Window, CompletedWindowsNeverChangeADecision) {
  // P6: under backfill with a cap, a window with as many waiting jobs as the cap is completed
  // by its deep candidates instead of growing. Deep queues (all queued at once) and spread
  // submits, caps 1-3, lanes, a reservation and sharing: each must equal the whole queue.
  int64_t completed = 0, passed_full = 0, passed_windowed = 0;
  for (uint32_t seed = 41; seed <= 52; ++seed) {
    const bool rich = seed % 2 == 0;
    auto jobs = rich ? rich_plan(seed, 400, seed % 3 == 0 ? 0 : 600) : random_plan(seed, 400, 8);
    if (!rich && seed % 3 == 0) {
      for (SimJob& j : jobs) j.submit_ms = 0;
    }
    SimMachine m = rich ? rich_machine(1 + seed % 3) : SimMachine{};
    if (!rich) {
      m.gpus = 8;
      m.max_reservations = 1 + static_cast<int>(seed % 3);
    }
    SimOptions full, windowed;
    full.full_queue = true;
    windowed.initial_window = seed % 4;  // 0: chosen from the machine
    std::string what = "seed " + std::to_string(seed);
    auto a = simulate(jobs, m, sched::Policy::kBackfill, {}, full);
    auto b = simulate(jobs, m, sched::Policy::kBackfill, {}, windowed);
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE(b) << b.error().message;
    expect_same(*a, *b, what);
    completed += b->stats.completed_passes;
    passed_full += a->stats.jobs_passed;
    passed_windowed += b->stats.jobs_passed;
  }
  EXPECT_GT(completed, 100) << "the completion must really be exercised";
  EXPECT_LT(passed_windowed, passed_full / 3);
}

TEST(Window, BackfillDeepInTheQueueIsFound) {
  // 4 GPUs; a 3-GPU job runs for 100 s; the head needs 4; a short 1-GPU job sits behind 50
  // long ones. EASY backfill starts it at once; a window of 2 must grow to find it.
  std::vector<SimJob> jobs;
  SimJob head{"head", 4, 50, 0, 10000, 10000, {}, {}, {}, "", 0, false};
  jobs.push_back(head);
  for (int i = 0; i < 50; ++i)
    jobs.push_back(
        SimJob{"long" + std::to_string(i), 1, 50, 0, 500000, 500000, {}, {}, {}, "", 0, false});
  jobs.push_back(SimJob{"short", 1, 50, 0, 5000, 5000, {}, {}, {}, "", 0, false});
  SimMachine m;
  m.gpus = 4;
  m.max_reservations = 1 << 30;  // the double has no cap
  SimOptions o;
  o.schedule = &testing::easy_backfill;
  o.initial_window = 2;
  auto r = simulate(jobs, m, sched::Policy::kBackfill, {{"busy", {0, 1, 2}, 100000, {}}}, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs.back().name, "short");
  EXPECT_EQ(r->jobs.back().start_ms, 0);
  EXPECT_EQ(r->jobs.front().start_ms, 100000);
  EXPECT_GT(r->stats.max_window, 50);
}

TEST(Window, RealBackfillDeepInTheQueue) {
  // The same with sched's backfill: the 20 long jobs would delay the head's reservation and
  // wait, and the short one fits before it, on the one free GPU.
  std::vector<SimJob> jobs;
  jobs.push_back(SimJob{"head", 4, 50, 0, 10000, 10000, {}, {}, {}, "", 0, false});
  for (int i = 0; i < 20; ++i)
    jobs.push_back(
        SimJob{"long" + std::to_string(i), 1, 50, 0, 500000, 500000, {}, {}, {}, "", 0, false});
  jobs.push_back(SimJob{"short", 1, 50, 0, 5000, 5000, {}, {}, {}, "", 0, false});
  SimMachine m;
  m.gpus = 4;
  SimOptions o;
  o.initial_window = 2;
  auto r = simulate(jobs, m, sched::Policy::kBackfill, {{"busy", {0, 1, 2}, 100000, {}}}, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->jobs.back().start_ms, 0);
  EXPECT_EQ(r->jobs.front().start_ms, 100000);
}

TEST(Window, PriorityBlockingKeepsPassesSmall) {
  std::vector<SimJob> jobs = random_plan(7, 2000, 8);
  SimMachine m;
  m.gpus = 16;
  auto r = simulate(jobs, m, sched::Policy::kPriority);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LT(r->stats.max_window, 200);
}

TEST(Window, CapIsCountedAndStillRuns) {
  std::vector<SimJob> jobs = random_plan(3, 300, 8);
  SimMachine m;
  m.gpus = 8;
  SimOptions o;
  o.schedule = &testing::easy_backfill;
  o.max_window = 4;
  auto r = simulate(jobs, m, sched::Policy::kBackfill, {}, o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LE(r->stats.max_window, 4);
  EXPECT_GT(r->stats.capped_passes, 0);
}

TEST(EligibleQueue, OrderFollowsThePolicy) {
  EligibleQueue fifo(sched::Policy::kFifo, 32, true), prio(sched::Policy::kPriority, 32, true);
  int cf = fifo.class_of(-1, false, 0, {}), cp = prio.class_of(-1, false, 0, {});
  fifo.insert(fifo.key_for(0, 90, 1), {1, 0, cf});
  fifo.insert(fifo.key_for(1, 10, 2), {1, 0, cf});
  prio.insert(prio.key_for(0, 90, 1), {1, 0, cp});
  prio.insert(prio.key_for(1, 10, 2), {1, 0, cp});
  EXPECT_EQ(fifo.begin()->job, 0);
  EXPECT_EQ(prio.begin()->job, 1);
}

TEST(EligibleQueue, ProofUsesFitAndDominance) {
  EligibleQueue q(sched::Policy::kBackfill, 32, true);
  int c = q.class_of(-1, false, 0, {});
  // jobs 0..2 in order: 2 GPUs 100 s, 1 GPU 200 s, 1 GPU 50 s
  QueueKey k0 = q.key_for(0, 50, 1), k1 = q.key_for(1, 50, 2), k2 = q.key_for(2, 50, 3);
  QueueJobInfo i0{2, 100000, c}, i1{1, 200000, c}, i2{1, 50000, c};
  q.insert(k0, i0);
  q.insert(k1, i1);
  q.insert(k2, i2);
  std::vector<sched::Gpu> gpus = {sched::Gpu{0, true, 0, 0, true, 0, -1},
                                  sched::Gpu{1, true, 0, 0, false, 0, -1}};
  std::vector<sched::Lane> lanes;
  std::vector<char> started(3, 0);
  // Window {0, 1}, both waiting, one GPU free: job 2 (1 GPU, shorter than job 1) is unproven.
  auto u = q.first_unproven(gpus, lanes, k1, started, {{k0, i0}, {k1, i1}});
  ASSERT_TRUE(u);
  EXPECT_EQ(u->job, 2);
  // Had job 2 been longer than job 1, job 1's wait would rule it out.
  q.erase(k2, i2);
  QueueJobInfo longer{1, 300000, c};
  q.insert(k2, longer);
  EXPECT_FALSE(q.first_unproven(gpus, lanes, k1, started, {{k0, i0}, {k1, i1}}));
  // No GPU free: nothing beyond can start, whatever its length.
  gpus[1].held_exclusive = true;
  q.erase(k2, longer);
  q.insert(k2, i2);
  EXPECT_FALSE(q.first_unproven(gpus, lanes, k1, started, {{k0, i0}, {k1, i1}}));
}

TEST(EligibleQueue, AllUnprovenListsEveryCandidateBeyondTheWindow) {
  EligibleQueue q(sched::Policy::kBackfill, 1, true);
  int c = q.class_of(-1, false, 0, {});
  // Window {0}: job 0 (2 GPUs, 100 s) waits; one GPU free. Beyond it: job 1 (1 GPU, 200 s),
  // job 2 (1 GPU, 50 s), job 3 (2 GPUs, 10 s), job 4 (1 GPU, 300 s).
  std::vector<QueueJobInfo> infos = {{2, 100000, c}, {1, 200000, c}, {1, 50000, c},
                                     {2, 10000, c},  {1, 300000, c}};
  std::vector<QueueKey> keys;
  for (int j = 0; j < 5; ++j) {
    keys.push_back(q.key_for(j, 50, j + 1));
    q.insert(keys.back(), infos[static_cast<size_t>(j)]);
  }
  std::vector<sched::Gpu> gpus = {sched::Gpu{0, true, 0, 0, true, 0, -1},
                                  sched::Gpu{1, true, 0, 0, false, 0, -1}};
  std::vector<char> started(5, 0);
  std::vector<QueueKey> out;
  // Job 3 needs 2 GPUs (P2 rules it out); 1-GPU jobs shorter than job 0's 100 s are ruled in,
  // and so are longer ones: job 0 has more GPUs, so it dominates none of them (P3).
  q.all_unproven(gpus, {}, keys[0], started, {{keys[0], infos[0]}}, INT64_MAX, out);
  std::vector<int> jobs;
  for (const QueueKey& k : out) jobs.push_back(k.job);
  std::sort(jobs.begin(), jobs.end());
  EXPECT_EQ(jobs, (std::vector<int>{1, 2, 4}));
  // With job 1 in the window and waiting too, it rules out the longer job 4.
  q.all_unproven(gpus, {}, keys[1], started, {{keys[0], infos[0]}, {keys[1], infos[1]}},
                 INT64_MAX, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].job, 2);
  // first_unproven names one of them: the earliest of each bucket's shortest.
  auto first = q.first_unproven(gpus, {}, keys[0], started, {{keys[0], infos[0]}});
  ASSERT_TRUE(first);
  EXPECT_EQ(first->job, 2);
}

TEST(EligibleQueue, PriorityBlockingRulesOutWorseJobs) {
  EligibleQueue q(sched::Policy::kPriority, 32, true);
  int c = q.class_of(-1, false, 0, {});
  QueueKey k0 = q.key_for(0, 50, 1), k1 = q.key_for(1, 50, 2);
  QueueJobInfo big{4, 100000, c}, small{1, 1000, c};
  q.insert(k0, big);
  q.insert(k1, small);
  std::vector<sched::Gpu> gpus = {sched::Gpu{0, true, 0, 0, false, 0, -1}};
  std::vector<char> started(2, 0);
  EXPECT_FALSE(q.first_unproven(gpus, {}, k0, started, {{k0, big}}));
  EligibleQueue b(sched::Policy::kBackfill, 32, true);
  int cb = b.class_of(-1, false, 0, {});
  big.job_class = small.job_class = cb;
  b.insert(k0, big);
  b.insert(k1, small);
  EXPECT_TRUE(b.first_unproven(gpus, {}, k0, started, {{k0, big}}));
}

}  // namespace
}  // namespace gpuq::sim
