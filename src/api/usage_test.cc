// SPDX-License-Identifier: Apache-2.0
// The report's and the timeline's arithmetic (usage.h) on hand-made runs, samples and events:
// clipping to the window, GPU-hours by key and shares, nearest-rank percentiles, idle-held
// hours from samples, lost hours by outcome, idle-while-waiting episodes, downsampling.
#include "api/usage.h"

#include <gtest/gtest.h>

namespace gpuq::api {
namespace {

using UsageRun = store::Store::UsageRun;
constexpr int64_t kHour = 3'600'000;
constexpr int64_t kT0 = 1'000 * kHour;  // the window opens here

UsageRun run(int64_t job, std::string user, std::vector<std::string> gpus, int64_t start, int64_t end,
             RunOutcome outcome = RunOutcome::kSucceeded) {
  UsageRun r;
  r.run_id = job * 10;
  r.job_id = job;
  r.number = 1;
  r.user = std::move(user);
  r.name = "job" + std::to_string(job);
  r.gpus = std::move(gpus);
  r.gpus_requested = static_cast<int>(r.gpus.size());
  r.started_at_ms = start;
  r.ended_at_ms = end;
  r.outcome = end == 0 ? RunOutcome::kRunning : outcome;
  r.submitted_at_ms = start;
  return r;
}

const Window kDay{kT0, kT0 + 24 * kHour};

TEST(Usage, ARunCountsOnlyItsTimeInsideTheWindowAndARunningOneUntilNow) {
  EXPECT_EQ(clipped_ms(run(1, "a", {"gpu0"}, kT0 - kHour, kT0 + kHour), kDay, 0), kHour);
  EXPECT_EQ(clipped_ms(run(1, "a", {"gpu0"}, kT0 + 23 * kHour, kT0 + 26 * kHour), kDay, 0), kHour);
  EXPECT_EQ(clipped_ms(run(1, "a", {"gpu0"}, kT0 - 5 * kHour, kT0 - kHour), kDay, 0), 0);
  EXPECT_EQ(clipped_ms(run(1, "a", {"gpu0"}, kT0 - kHour, kT0 + 30 * kHour), kDay, 0), 24 * kHour);
  EXPECT_EQ(clipped_ms(run(1, "a", {"gpu0"}, kT0 + kHour, 0), kDay, kT0 + 3 * kHour), 2 * kHour);
  EXPECT_EQ(clipped_ms(run(1, "a", {"gpu0"}, kT0 + kHour, 0), kDay, kT0 + 90 * kHour), 23 * kHour);
}

TEST(Usage, GpuHoursByUserWithSharesOfTheMachine) {
  std::vector<UsageRun> runs = {
      run(1, "ann", {"gpu0", "gpu1"}, kT0 - kHour, kT0 + 2 * kHour),  // 2 h x 2 GPUs
      run(2, "bob", {"gpu2"}, kT0 + kHour, kT0 + 7 * kHour),         // 6 h
      run(3, "ann", {"gpu3"}, kT0, 0),                                // running: 4 h to now
      run(4, "", {"gpu0"}, kT0 + 5 * kHour, kT0 + 6 * kHour),         // an older daemon's job
  };
  runs[2].job_id = 1;  // a second run of job 1
  auto groups = gpu_hours_by(runs, GroupBy::kUser, kDay, kT0 + 4 * kHour, {"gpu0", "gpu1", "gpu2", "gpu3"});
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].key, "ann");
  EXPECT_DOUBLE_EQ(groups[0].gpu_hours, 8.0);
  EXPECT_DOUBLE_EQ(groups[0].share, 8.0 / 96.0);
  EXPECT_EQ(groups[0].runs, 2);
  EXPECT_EQ(groups[0].jobs, 1);
  EXPECT_EQ(groups[1].key, "bob");
  EXPECT_DOUBLE_EQ(groups[1].gpu_hours, 6.0);
  EXPECT_EQ(groups[2].key, "(unknown)");
  EXPECT_DOUBLE_EQ(groups[2].gpu_hours, 1.0);
}

TEST(Usage, EachUsersShareOfWhatWasUsedBesideTheirFairShare) {
  std::vector<UsageRun> runs = {
      run(1, "ann", {"gpu0", "gpu1"}, kT0, kT0 + 3 * kHour),  // 6 h
      run(2, "bob", {"gpu2"}, kT0, kT0 + 3 * kHour),          // 3 h
      run(3, "", {"gpu3"}, kT0, kT0 + 2 * kHour),             // an older daemon's job: 2 h
  };
  auto groups = gpu_hours_by(runs, GroupBy::kUser, kDay, kT0 + 4 * kHour, {"gpu0", "gpu1", "gpu2", "gpu3"});
  add_fair_shares(groups);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].key, "ann");
  EXPECT_DOUBLE_EQ(groups[0].used_share, 6.0 / 11.0);
  EXPECT_DOUBLE_EQ(groups[0].fair_share, 0.5);  // two users ran something
  EXPECT_EQ(groups[1].key, "bob");
  EXPECT_DOUBLE_EQ(groups[1].used_share, 3.0 / 11.0);
  EXPECT_DOUBLE_EQ(groups[1].fair_share, 0.5);
  EXPECT_EQ(groups[2].key, "(unknown)");
  EXPECT_DOUBLE_EQ(groups[2].fair_share, -1);  // nobody's: no fair share
}

TEST(Usage, GpuHoursByGpuListEveryGpuAndByOutcomeAndName) {
  std::vector<UsageRun> runs = {
      run(1, "ann", {"gpu0", "gpu1"}, kT0, kT0 + 2 * kHour, RunOutcome::kFailed),
      run(2, "bob", {"gpu1"}, kT0 + 2 * kHour, kT0 + 3 * kHour),
  };
  runs[1].name = "";
  auto by_gpu = gpu_hours_by(runs, GroupBy::kGpu, kDay, kT0 + 5 * kHour, {"gpu0", "gpu1", "gpu2"});
  ASSERT_EQ(by_gpu.size(), 3u);
  EXPECT_EQ(by_gpu[0].key, "gpu1");
  EXPECT_DOUBLE_EQ(by_gpu[0].gpu_hours, 3.0);
  EXPECT_DOUBLE_EQ(by_gpu[0].share, 3.0 / 72.0);
  EXPECT_EQ(by_gpu[0].runs, 2);
  EXPECT_EQ(by_gpu[0].jobs, 2);
  EXPECT_EQ(by_gpu[1].key, "gpu0");
  EXPECT_EQ(by_gpu[2].key, "gpu2");
  EXPECT_DOUBLE_EQ(by_gpu[2].gpu_hours, 0.0);
  auto by_outcome = gpu_hours_by(runs, GroupBy::kOutcome, kDay, 0, {"gpu0", "gpu1", "gpu2"});
  ASSERT_EQ(by_outcome.size(), 2u);
  EXPECT_EQ(by_outcome[0].key, "failed");
  EXPECT_DOUBLE_EQ(by_outcome[0].gpu_hours, 4.0);
  auto by_name = gpu_hours_by(runs, GroupBy::kName, kDay, 0, {"gpu0"});
  EXPECT_EQ(by_name[1].key, "(unnamed)");
}

TEST(Usage, PercentilesAreNearestRank) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({7}, 90), 7);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 50), 2);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 90), 4);
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  EXPECT_EQ(percentile(hundred, 50), 50);
  EXPECT_EQ(percentile(hundred, 90), 90);
  EXPECT_EQ(percentile(hundred, 100), 100);
  EXPECT_EQ(percentile(hundred, 0), 1);
}

TEST(Usage, WaitsAreOfFirstRunsThatStartedInTheWindow) {
  std::vector<UsageRun> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(run(i + 1, "ann", {"gpu0"}, kT0 + (i + 1) * kHour, kT0 + 10 * kHour));
    runs.back().submitted_at_ms = runs.back().started_at_ms - (i + 1) * 60'000;  // 1..4 min
  }
  runs.push_back(run(9, "bob", {"gpu0", "gpu1"}, kT0 + kHour, 0));
  runs.back().submitted_at_ms = kT0;  // waited an hour
  runs.push_back(run(10, "bob", {"gpu0"}, kT0 - kHour, kT0 + kHour));  // started before
  runs.push_back(run(11, "bob", {"gpu0"}, kT0 + kHour, kT0 + 2 * kHour));
  runs.back().number = 2;  // a retry: not a wait in the queue
  Waits w = waits(runs, kDay);
  ASSERT_EQ(w.by_user.size(), 2u);
  EXPECT_EQ(w.by_user[0].key, "ann");
  EXPECT_EQ(w.by_user[0].jobs, 4);
  EXPECT_DOUBLE_EQ(w.by_user[0].p50_s, 120);
  EXPECT_DOUBLE_EQ(w.by_user[0].p90_s, 240);
  EXPECT_DOUBLE_EQ(w.by_user[0].max_s, 240);
  EXPECT_EQ(w.by_user[1].key, "bob");
  EXPECT_EQ(w.by_user[1].jobs, 1);
  EXPECT_DOUBLE_EQ(w.by_user[1].max_s, 3600);
  ASSERT_EQ(w.by_gpus.size(), 2u);
  EXPECT_EQ(w.by_gpus[0].key, "1");
  EXPECT_EQ(w.by_gpus[0].jobs, 4);
  EXPECT_EQ(w.by_gpus[1].key, "2");
}

TEST(Usage, IdleHeldHoursComeFromSamplesAtOrBelowTheThreshold) {
  UsageRun r = run(1, "ann", {"gpu0", "gpu1"}, kT0 - kHour, kT0 + kHour);
  store::Store::SamplesByRun samples;
  int64_t half = kHour / 2;
  samples[r.run_id] = {
      {kT0 - half, 0, 10},        // idle, half of it before the window
      {kT0 + half / 2, 80, 10},   // busy
      {kT0 + half, 5, 10},        // idle (5 <= 5) until the run ends
      {kT0 + kHour - 60'000, -1, 0},  // unknown: not counted
  };
  // The first idle sample counts from kT0 to kT0 + 15 min, the third 29 min: 44 min x 2 GPUs.
  double hours = idle_held_gpu_hours({r}, samples, 5, kHour, kDay, 0);
  EXPECT_NEAR(hours, 2 * 44.0 / 60.0, 1e-9);
  // A gap longer than max_gap_ms counts only max_gap_ms.
  hours = idle_held_gpu_hours({r}, samples, 5, 60'000, kDay, 0);
  EXPECT_NEAR(hours, 2 * 1.0 / 60.0, 1e-9);  // the third sample's first minute
  EXPECT_EQ(idle_held_gpu_hours({r}, {}, 5, kHour, kDay, 0), 0);
}

TEST(Usage, LostHoursByOutcomeListEveryOutcome) {
  std::vector<UsageRun> runs = {
      run(1, "a", {"gpu0", "gpu1"}, kT0, kT0 + kHour, RunOutcome::kFailed),
      run(2, "a", {"gpu0"}, kT0, kT0 + 3 * kHour, RunOutcome::kPreempted),
      run(3, "a", {"gpu0"}, kT0, kT0 + 3 * kHour, RunOutcome::kSucceeded),
      run(4, "a", {"gpu1"}, kT0, kT0 + kHour / 2, RunOutcome::kNotStarted),
  };
  auto lost = lost_gpu_hours(runs, kDay, 0);
  EXPECT_EQ(lost.size(), 6u);
  EXPECT_DOUBLE_EQ(lost["not-started"], 0.5) << "held while its daemon was down";
  EXPECT_DOUBLE_EQ(lost["failed"], 2.0);
  EXPECT_DOUBLE_EQ(lost["preempted"], 3.0);
  EXPECT_DOUBLE_EQ(lost["timed-out"], 0.0);
  EXPECT_DOUBLE_EQ(lost["cancelled"], 0.0);
  EXPECT_DOUBLE_EQ(lost["lost"], 0.0);
}

Event idle_event(int64_t at, const std::string& phase, int64_t for_ms, int free_gpus) {
  Event e;
  e.kind = "queue.idle_with_work";
  e.time_ms = at;
  e.data = {{"phase", phase}, {"for_ms", for_ms}, {"free_gpus", free_gpus}};
  return e;
}

TEST(Usage, IdleWhileWaitingFollowsTheEpisodes) {
  int64_t m = 60'000;
  std::vector<Event> events = {
      // Began before the window (10 min before its start event), repeated, ended.
      idle_event(kT0 - 5 * m, "start", 10 * m, 2),
      idle_event(kT0 + 25 * m, "repeat", 40 * m, 1),
      idle_event(kT0 + 40 * m, "end", 55 * m, 1),
      // Still open at `now`.
      idle_event(kT0 + 2 * kHour, "start", 10 * m, 3),
  };
  auto intervals = idle_while_waiting(events, kDay, kT0 + 3 * kHour);
  ASSERT_EQ(intervals.size(), 3u);
  EXPECT_EQ(intervals[0], (IdleInterval{kT0, kT0 + 25 * m, 2}));
  EXPECT_EQ(intervals[1], (IdleInterval{kT0 + 25 * m, kT0 + 40 * m, 1}));
  EXPECT_EQ(intervals[2], (IdleInterval{kT0 + 2 * kHour - 10 * m, kT0 + 3 * kHour, 3}));
  EXPECT_NEAR(interval_gpu_hours(intervals), (2 * 25 + 15 + 3 * 70) / 60.0, 1e-9);
  // A window that opens inside an episode whose start is older than the lookback: the repeat
  // says since when it held.
  intervals = idle_while_waiting({idle_event(kT0 + 10 * m, "repeat", 50 * m, 2),
                                  idle_event(kT0 + 20 * m, "end", 60 * m, 2)},
                                 kDay, kT0 + kHour);
  ASSERT_EQ(intervals.size(), 1u);
  EXPECT_EQ(intervals[0], (IdleInterval{kT0, kT0 + 20 * m, 2}));
  EXPECT_TRUE(idle_while_waiting({idle_event(kT0, "end", m, 1)}, kDay, kT0 + kHour).empty());
}

TEST(Usage, DownsamplingKeepsAtMostThePointsAskedFor) {
  std::vector<RunSample> samples;
  for (int i = 0; i < 1000; ++i) samples.push_back({i * 30'000LL, i % 2 == 0 ? 10 : 30, i});
  auto few = downsample(samples, 200);
  ASSERT_EQ(few.size(), 200u);
  EXPECT_EQ(few[0], (RunSample{0, 18, 4}));  // five samples: 10, 30, 10, 30, 10
  EXPECT_EQ(few[199].time_ms, 995 * 30'000LL);
  EXPECT_EQ(few[199].mem_mib, 999);
  std::vector<RunSample> short_list(samples.begin(), samples.begin() + 3);
  EXPECT_EQ(downsample(short_list, 200), short_list);
  EXPECT_EQ(downsample({{1, -1, 5}, {2, -1, 7}}, 1), (std::vector<RunSample>{{1, -1, 7}}));
}

}  // namespace
}  // namespace gpuq::api
