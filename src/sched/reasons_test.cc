// SPDX-License-Identifier: Apache-2.0
// WaitReason::text: every kind, the exact forms other parts of gpuq rely on, and rounding.
#include <gtest/gtest.h>

#include "sched/test_support.h"

namespace gpuq::sched::testing {
namespace {

using Kind = WaitReason::Kind;
constexpr int64_t kMin = 60'000;

WaitReason reason(Kind kind) {
  WaitReason r;
  r.kind = kind;
  return r;
}

TEST(Reasons, Text) {
  Snapshot s = machine(4);
  s.lanes = {lane("net", 1, {"gpu"}), lane("cpu", 2)};
  s.reservations = {reservation("eval", {0, 1})};
  struct Row {
    WaitReason reason;
    std::string text;
  };
  auto with = [](Kind kind, auto&& fill) {
    WaitReason r = reason(kind);
    fill(r);
    return r;
  };
  std::vector<Row> rows = {
      // The end-to-end tests grep for these two forms: keep them exactly.
      {with(Kind::kNeedsGpus, [](WaitReason& r) { r.needed = 2, r.free = 1; }),
       "needs 2 GPUs, 1 free"},
      {with(Kind::kBehindBetterJobs, [](WaitReason& r) { r.better_jobs = 1, r.needed = 1; }),
       "behind 1 better job waiting for GPUs (needs 1)"},
      {with(Kind::kNeedsGpus,
            [](WaitReason& r) { r.needed = 4, r.free = 2, r.next_free_in_ms = 40 * kMin; }),
       "needs 4 GPUs, 2 free, next free in ~40m"},
      {with(Kind::kNeedsGpus, [](WaitReason& r) { r.needed = 1, r.free = 0, r.usable = 0; }),
       "needs 1 GPU, 0 free, only 0 usable"},
      {with(Kind::kBehindBetterJobs, [](WaitReason& r) { r.better_jobs = 3, r.needed = 2; }),
       "behind 3 better jobs waiting for GPUs (needs 2)"},
      {with(Kind::kBehindBetterJobs, [](WaitReason& r) { r.better_jobs = 2, r.lane = 1; }),
       "behind 2 better jobs that lane cpu would delay"},
      {with(Kind::kLaneBusy, [](WaitReason& r) { r.lane = 0, r.job = 7; }),
       "lane net busy with job 7"},
      {with(Kind::kLaneBusy,
            [](WaitReason& r) { r.lane = 0, r.job = 7, r.next_free_in_ms = 5 * kMin; }),
       "lane net busy with job 7, next free in ~5m"},
      {with(Kind::kLaneBusy, [](WaitReason& r) { r.lane = 0; }), "lane net busy"},
      {with(Kind::kLaneBusy, [](WaitReason& r) { r.lane = 5; }), "lane #5 does not exist"},
      {with(Kind::kLaneExcluded,
            [](WaitReason& r) { r.lane = 0, r.job = 12, r.other_lane = WaitReason::kGpuWork; }),
       "lane net excluded while job 12 (GPU work) runs"},
      {with(Kind::kLaneExcluded,
            [](WaitReason& r) { r.lane = WaitReason::kGpuWork, r.job = 7, r.other_lane = 0; }),
       "GPU work excluded while job 7 (lane net) runs"},
      {with(Kind::kLaneExcluded,
            [](WaitReason& r) { r.lane = 0, r.job = 0, r.other_lane = WaitReason::kGpuWork; }),
       "lane net excluded while GPU work runs"},
      {with(Kind::kReservedForBetter,
            [](WaitReason& r) { r.job = 4, r.next_free_in_ms = 12 * kMin; }),
       "would delay job 4, which starts in ~12m"},
      {with(Kind::kReservedForBetter, [](WaitReason& r) { r.job = 4; }), "would delay job 4"},
      {with(Kind::kNoGpuMemory, [](WaitReason& r) { r.needed = 1, r.gpu_mem_mib = 20000; }),
       "no GPU has 20000 MiB free"},
      {with(Kind::kReservation, [](WaitReason& r) { r.reservation = 0; }),
       "reserved GPUs 0,1 busy"},
      {with(Kind::kReservation, [](WaitReason& r) { r.reservation = 2; }),
       "reservation #2 has no GPUs"},
      {reason(Kind::kDraining), "draining: the queue starts nothing new (gpuq undrain)"},
  };
  for (const Row& row : rows) EXPECT_EQ(row.reason.text(s), row.text);
}

TEST(Reasons, DurationsAreRoundedAsPeopleSayThem) {
  std::vector<std::pair<int64_t, std::string>> rows = {
      {0, "<1s"},
      {999, "<1s"},
      {1'000, "~1s"},
      {59'400, "~59s"},
      {59'600, "~1m"},
      {90 * 1000, "~2m"},
      {59 * kMin, "~59m"},
      {60 * kMin, "~1h"},
      {150 * kMin, "~2h30m"},
      {30 * 60 * kMin + 20 * kMin, "~30h"},
      {50 * 60 * kMin, "~2d"},
      {80 * 60 * kMin, "~3d"},
  };
  Snapshot s = machine(1);
  for (const auto& [ms, text] : rows) {
    WaitReason r = reason(Kind::kNeedsGpus);
    r.needed = 1;
    r.next_free_in_ms = ms;
    EXPECT_EQ(r.text(s), "needs 1 GPU, 0 free, next free in " + text) << ms;
  }
}

// A reason's narrow fields saturate rather than wrap: a user limit of ten billion reads as
// the largest 32-bit count, not as a negative one.
TEST(Reasons, NarrowFieldsSaturate) {
  EXPECT_EQ(narrow_to<int16_t>(1024), 1024);
  EXPECT_EQ(narrow_to<int16_t>(-2), -2);
  EXPECT_EQ(narrow_to<int16_t>(40'000), 32'767);
  EXPECT_EQ(narrow_to<int16_t>(-40'000), -32'768);
  EXPECT_EQ(narrow_to<int32_t>(10'000'000'000), 2'147'483'647);
  EXPECT_EQ(narrow_to<int32_t>(int64_t{1} << 30), int32_t{1} << 30);  // the largest gpu_mem
}

}  // namespace
}  // namespace gpuq::sched::testing
