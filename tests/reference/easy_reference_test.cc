// SPDX-License-Identifier: Apache-2.0
// The reference itself, on cases worked by hand, and the trace generator's promises.
#include "easy_reference.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/trace.h"
#include "sim_jobs.h"
#include "wide_trace.h"

namespace gpuq::reference {
namespace {

constexpr int64_t kMin = 60'000;

RefJob at0(int gpus, int64_t minutes) { return {0, gpus, minutes * kMin, minutes * kMin}; }

TEST(EasyReference, BackfillsAShortJobBeforeTheHeadsShadowTime) {
  // 4 GPUs. J1 takes 2 for 10 min; J2 needs all 4 (shadow: minute 10, no extra GPUs); J3 (2
  // GPUs, 5 min) ends by the shadow time; J4 (2 GPUs, 20 min) finds nothing free.
  std::vector<RefJob> jobs = {at0(2, 10), at0(4, 10), at0(2, 5), at0(2, 20)};
  RefResult easy = simulate_reference(jobs, 4, RefPolicy::kEasy);
  EXPECT_EQ(easy.start_ms, (std::vector<int64_t>{0, 10 * kMin, 0, 20 * kMin}));
  RefResult fifo = simulate_reference(jobs, 4, RefPolicy::kFifo);
  EXPECT_EQ(fifo.start_ms, (std::vector<int64_t>{0, 10 * kMin, 20 * kMin, 20 * kMin}));
  EXPECT_DOUBLE_EQ(easy.mean_wait_s, (10 + 20) * 60.0 / 4);
  EXPECT_DOUBLE_EQ(fifo.mean_wait_s, (10 + 20 + 20) * 60.0 / 4);
}

TEST(EasyReference, LongJobsUseOnlyTheExtraGpus) {
  // 4 GPUs. J1 takes 3 for 10 min; J2 needs 2: shadow at minute 10 with 4 free, 2 extra.
  // J3 (1 GPU, 100 min) takes one extra GPU; J4 (1 GPU, 100 min) finds no GPU free now.
  // At minute 10, J2 starts on 2 of the 3 GPUs free, and J4 on the last.
  std::vector<RefJob> jobs = {at0(3, 10), at0(2, 10), at0(1, 100), at0(1, 100)};
  RefResult easy = simulate_reference(jobs, 4, RefPolicy::kEasy);
  EXPECT_EQ(easy.start_ms, (std::vector<int64_t>{0, 10 * kMin, 0, 10 * kMin}));
  // With 2 GPUs taken for 10 minutes, a long job would delay the head: it waits.
  jobs = {at0(2, 10), at0(3, 10), at0(2, 100)};
  easy = simulate_reference(jobs, 4, RefPolicy::kEasy);
  EXPECT_EQ(easy.start_ms, (std::vector<int64_t>{0, 10 * kMin, 20 * kMin}));
}

TEST(EasyReference, EstimatesDecideRuntimesHappen) {
  // J1 runs 5 of its estimated 10 minutes: J3, waiting for its GPUs, gets them at minute 5.
  std::vector<RefJob> jobs = {{0, 2, 5 * kMin, 10 * kMin}, at0(2, 10), at0(2, 15)};
  RefResult easy = simulate_reference(jobs, 4, RefPolicy::kEasy);
  EXPECT_EQ(easy.start_ms, (std::vector<int64_t>{0, 0, 5 * kMin}));
  // The head (J2) is planned for minute 10 but starts when J1 really ends; J3 then waits
  // for the head, not for the plan.
  jobs = {{0, 4, 5 * kMin, 10 * kMin}, at0(4, 10), at0(2, 15)};
  easy = simulate_reference(jobs, 4, RefPolicy::kEasy);
  EXPECT_EQ(easy.start_ms, (std::vector<int64_t>{0, 5 * kMin, 15 * kMin}));
  // Utilisation: 4x5 + 4x10 + 2x15 GPU-minutes over 4 GPUs x 30 minutes.
  EXPECT_DOUBLE_EQ(easy.utilization, (20.0 + 40 + 30) / (4 * 30));
}

TEST(WideTrace, IsDeterministicWideAndRoundedUp) {
  WideTraceOptions options;
  options.seed = 7;
  options.jobs = 2000;
  std::vector<RefJob> jobs = generate_wide_trace(options);
  ASSERT_EQ(jobs.size(), 2000u);
  std::vector<RefJob> again = generate_wide_trace(options);
  std::set<int> widths;
  double gpu_ms = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const RefJob& j = jobs[i];
    EXPECT_EQ(j.submit_ms, again[i].submit_ms);
    EXPECT_EQ(j.runtime_ms, again[i].runtime_ms);
    EXPECT_GE(j.gpus, 4);
    EXPECT_LE(j.gpus, 32);
    widths.insert(j.gpus);
    EXPECT_GE(j.estimate_ms, j.runtime_ms);
    EXPECT_LT(j.estimate_ms, 2 * j.runtime_ms < kMin ? kMin + 1 : 2 * j.runtime_ms);
    EXPECT_EQ(j.estimate_ms % kMin, 0);
    EXPECT_EQ(j.estimate_ms / kMin & (j.estimate_ms / kMin - 1), 0) << "a power of two minutes";
    if (i > 0) {
      EXPECT_GE(j.submit_ms, jobs[i - 1].submit_ms);
    }
    gpu_ms += static_cast<double>(j.gpus) * static_cast<double>(j.runtime_ms);
  }
  EXPECT_GE(widths.size(), 4u);
  // Offered load over the arrival period: near saturation (sampling noise allowed).
  const double offered = gpu_ms / (256.0 * static_cast<double>(jobs.back().submit_ms));
  EXPECT_GT(offered, 0.85);
  EXPECT_LT(offered, 1.1);
  EXPECT_NE(generate_wide_trace({8, 2000, 256, 0.97})[0].runtime_ms, jobs[0].runtime_ms);
}

TEST(WideTrace, CsvReplaysAsTheSameJobs) {
  std::vector<RefJob> jobs = generate_wide_trace({3, 200, 256, 0.97});
  auto parsed = sim::parse_trace_csv(wide_trace_csv(jobs), "wide.csv");
  ASSERT_TRUE(parsed) << parsed.error().message;
  std::vector<sim::SimJob> direct = to_sim_jobs(jobs);
  ASSERT_EQ(parsed->size(), direct.size());
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ((*parsed)[i].name, direct[i].name);
    EXPECT_EQ((*parsed)[i].submit_ms, direct[i].submit_ms);
    EXPECT_EQ((*parsed)[i].gpus, direct[i].gpus);
    EXPECT_EQ((*parsed)[i].duration_ms, direct[i].duration_ms);
    EXPECT_EQ((*parsed)[i].estimate_ms, direct[i].estimate_ms);
  }
}

}  // namespace
}  // namespace gpuq::reference
