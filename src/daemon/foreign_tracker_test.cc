// SPDX-License-Identifier: Apache-2.0
// The foreign-GPU rule on a fake clock: starts, repeats, ends; memory without a process.
#include "daemon/foreign_tracker.h"

#include <gtest/gtest.h>

namespace gpuq::daemon {
namespace {

ForeignObservation seen(int slot, std::vector<GpuUser> foreign, bool memory_only = false,
                        int64_t used = 0) {
  ForeignObservation o;
  o.slot = slot;
  o.gpu = "gpu" + std::to_string(slot);
  o.foreign = std::move(foreign);
  o.memory_without_process = memory_only;
  o.memory_used_mib = used;
  return o;
}

const GpuUser kVllm{4242, "python -m vllm.entrypoints", "ann", 18000};

TEST(ForeignTrackerTest, AProcessStartsRepeatsAndEnds) {
  ForeignTracker tracker(2, 60'000);
  auto events = tracker.observe({seen(0, {}), seen(1, {kVllm}, false, 18000)}, 1'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "resource.foreign");
  EXPECT_EQ(events[0].slot, 1);
  EXPECT_EQ(events[0].data["gpu"], "gpu1");
  EXPECT_EQ(events[0].data["processes"][0]["pid"], 4242);
  EXPECT_EQ(events[0].data["processes"][0]["command"], "python -m vllm.entrypoints");
  EXPECT_EQ(events[0].data["processes"][0]["used_memory_mib"], 18000);
  EXPECT_EQ(events[0].data["reminder"], false);
  EXPECT_TRUE(tracker.foreign(1));
  EXPECT_FALSE(tracker.foreign(0));

  // Before the repeat interval: nothing new.
  EXPECT_TRUE(tracker.observe({seen(1, {kVllm})}, 30'000).empty());
  // At the interval: a reminder that says how long.
  events = tracker.observe({seen(1, {kVllm})}, 61'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data["reminder"], true);
  EXPECT_EQ(events[0].data["for_ms"], 60'000);
  EXPECT_TRUE(tracker.observe({seen(1, {kVllm})}, 100'000).empty());
  events = tracker.observe({seen(1, {kVllm})}, 121'000);
  ASSERT_EQ(events.size(), 1u);

  // It leaves: freed, once.
  events = tracker.observe({seen(1, {})}, 130'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "resource.freed");
  EXPECT_EQ(events[0].data["for_ms"], 129'000);
  EXPECT_FALSE(tracker.foreign(1));
  EXPECT_TRUE(tracker.observe({seen(1, {})}, 200'000).empty());
  EXPECT_TRUE(tracker.detail(1).is_null());
}

TEST(ForeignTrackerTest, MemoryWithoutAProcessMustLastTwoProbes) {
  ForeignTracker tracker(1, 60'000);
  EXPECT_TRUE(tracker.observe({seen(0, {}, true, 5000)}, 1'000).empty());
  EXPECT_FALSE(tracker.foreign(0));
  auto events = tracker.observe({seen(0, {}, true, 5000)}, 2'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "resource.foreign");
  EXPECT_NE(events[0].data["why"].get<std::string>().find("5000 MiB used with no process listed"),
            std::string::npos);
  EXPECT_TRUE(tracker.foreign(0));
  events = tracker.observe({seen(0, {}, false, 10)}, 3'000);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "resource.freed");
}

TEST(ForeignTrackerTest, OneHighMemoryProbeIsNotEnough) {
  ForeignTracker tracker(1, 60'000);
  EXPECT_TRUE(tracker.observe({seen(0, {}, true, 5000)}, 1'000).empty());
  EXPECT_TRUE(tracker.observe({seen(0, {}, false, 0)}, 2'000).empty());
  EXPECT_TRUE(tracker.observe({seen(0, {}, true, 5000)}, 3'000).empty());
  EXPECT_FALSE(tracker.foreign(0));
}

TEST(ForeignTrackerTest, AGpuNotInTheProbeKeepsItsState) {
  ForeignTracker tracker(2, 60'000);
  tracker.observe({seen(0, {kVllm})}, 1'000);
  EXPECT_TRUE(tracker.observe({seen(1, {})}, 2'000).empty());
  EXPECT_TRUE(tracker.foreign(0));
  auto detail = tracker.detail(0);
  EXPECT_EQ(detail["processes"][0]["user"], "ann");
  EXPECT_EQ(detail["why"], "1 process that no gpuq run owns");
}

TEST(ForeignTrackerTest, ANewSetOfProcessesIsStillOneEpisode) {
  ForeignTracker tracker(1, 60'000);
  tracker.observe({seen(0, {kVllm})}, 1'000);
  GpuUser other{77, "", "", 10};
  EXPECT_TRUE(tracker.observe({seen(0, {other})}, 2'000).empty());
  EXPECT_EQ(tracker.detail(0)["processes"][0]["command"], "(not visible from here)");
}

}  // namespace
}  // namespace gpuq::daemon
