// SPDX-License-Identifier: Apache-2.0
#include "daemon/metrics.h"

#include <gtest/gtest.h>
#include <thread>

namespace gpuq::daemon {
namespace {

TEST(Histogram, BucketsAreUpperBoundsInclusiveAndCumulative) {
  Histogram h;
  h.observe(0.001);   // first bucket
  h.observe(0.005);   // on a bound: counts as <= it
  h.observe(2);       // (1, 5]
  h.observe(100000);  // above every bound
  h.observe(-3);      // clamped to 0
  EXPECT_EQ(h.count, 5);
  EXPECT_DOUBLE_EQ(h.sum, 0.001 + 0.005 + 2 + 100000);
  auto c = h.cumulative();
  EXPECT_EQ(c[0], 3);  // le=0.005
  EXPECT_EQ(c[5], 3);  // le=1
  EXPECT_EQ(c[6], 4);  // le=5
  EXPECT_EQ(c[Histogram::kBounds.size() - 1], 4);  // le=86400
  EXPECT_EQ(c.back(), h.count);                    // le=+Inf
  for (size_t i = 1; i < c.size(); ++i) EXPECT_LE(c[i - 1], c[i]);
}

TEST(Metrics, BaselineFromTheStoreThenIncrements) {
  Metrics m;
  m.count_event("job.submitted");  // replaced by the baseline
  m.set_baseline({{"job.submitted", 3}, {"job.started", 2}},
                 {{"running", 1}, {"succeeded", 1}, {"failed", 0}});
  m.count_event("job.submitted");
  m.count_event("daemon.started");
  m.run_started(0.5, 0.5);
  m.run_started(40, std::nullopt);
  m.run_finished("succeeded");
  m.run_finished("lost");
  auto s = m.snapshot();
  EXPECT_EQ(s.events_by_kind.at("job.submitted"), 4);
  EXPECT_EQ(s.events_by_kind.at("job.started"), 2);
  EXPECT_EQ(s.events_by_kind.at("daemon.started"), 1);
  EXPECT_EQ(s.runs_started, 2 + 2);  // every stored run row, then the two started
  EXPECT_EQ(s.runs_finished.at("succeeded"), 2);
  EXPECT_EQ(s.runs_finished.at("failed"), 0);
  EXPECT_EQ(s.runs_finished.at("lost"), 1);
  EXPECT_EQ(s.runs_finished.count("running"), 0u);
  EXPECT_EQ(s.queue_wait.count, 2);
  EXPECT_DOUBLE_EQ(s.queue_wait.sum, 40.5);
  EXPECT_EQ(s.submit_to_start.count, 1);
}

TEST(Metrics, ConcurrentWritersAndReadersSeeWholeUpdates) {
  Metrics m;
  constexpr int kEach = 20000;
  std::thread writer([&] {
    for (int i = 0; i < kEach; ++i) {
      m.count_event("job.started");
      m.run_started(0.01, 0.01);
    }
  });
  // A reader never sees a histogram whose buckets disagree with its count.
  for (int i = 0; i < 200; ++i) {
    auto s = m.snapshot();
    EXPECT_EQ(s.queue_wait.cumulative().back(), s.queue_wait.count);
    EXPECT_EQ(s.queue_wait.count, s.runs_started);
  }
  writer.join();
  auto s = m.snapshot();
  EXPECT_EQ(s.events_by_kind.at("job.started"), kEach);
  EXPECT_EQ(s.submit_to_start.count, kEach);
}

}  // namespace
}  // namespace gpuq::daemon
