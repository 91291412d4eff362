// SPDX-License-Identifier: Apache-2.0
// `gpuq simulate` keeps its answers while it gets faster: a fixed generated 3,000-job plan
// (sim/testing/plan_generator.h, seed 1, on 8 GPUs with its config.toml) must give every job
// the same start, end and GPUs as before, under each policy, and a generated trace the same
// summary. The golden values were computed with main's gpuq before the plan loading and the
// simulator's passes were reworked (1a78bd9): `gpuq simulate plan.json --gpus 8 --config
// config.toml --json --policy P`, each job's line "name start_ms end_ms gpus" hashed with
// 64-bit FNV-1a as below; the trace summaries are that binary's --json output. The backfill
// values were computed again after backfill became EASY (7946cce, merged in 4d681fe): that
// rule change alone moved them (tests/reference/backfill_quality_test checks the new starts
// against an independent EASY simulator); fifo and priority kept theirs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "cli/commands.h"
#include "cli/fake_transport.h"
#include "sim/testing/plan_generator.h"

namespace gpuq::cli {
namespace {

using testing::TempDir;

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// Each job's line "name start_ms end_ms g1,g2" in plan order, hashed.
uint64_t schedule_hash(const Json& result) {
  std::string text;
  for (const Json& job : result["jobs"]) {
    std::string gpus;
    for (const Json& g : job["gpus"]) gpus += (gpus.empty() ? "" : ",") + std::to_string(g.get<int>());
    text += job["name"].get<std::string>() + " " +
            std::to_string(std::llround(job["start_s"].get<double>() * 1000)) + " " +
            std::to_string(std::llround(job["end_s"].get<double>() * 1000)) + " " + gpus + "\n";
  }
  return fnv1a(text);
}

class SimulateGolden : public testing::ScriptedCli {
 protected:
  // The --json result of `gpuq simulate ARGS --gpus 8 --policy POLICY`.
  Json simulate(std::vector<std::string> args, const std::string& policy) {
    process_.out.str("");
    process_.err.str("");
    for (std::string a : {"--gpus", "8", "--json", "--policy"}) args.push_back(a);
    args.push_back(policy);
    EXPECT_EQ(run(args), kExitOk) << err();
    return Json::parse(out(), nullptr, false);
  }

  TempDir dir_;
};

TEST_F(SimulateGolden, AGeneratedPlanKeepsEveryJobsStartEndAndGpus) {
  auto generated = sim::testing::generate_plan(3000, 1);
  std::string plan = dir_.write("plan.json", generated.plan);
  for (const auto& [name, text] : generated.scripts) dir_.write(name, text);
  std::string config = dir_.write("config.toml", sim::testing::kGeneratedPlanConfig);
  struct Golden {
    std::string policy;
    uint64_t hash;
    double makespan_s;
  };
  for (const Golden& golden : {Golden{"fifo", 0x79b658a853d72c23ULL, 10812096.0},
                               Golden{"priority", 0xe5a900930ed5abb1ULL, 11065824.0},
                               Golden{"backfill", 0x7cb109e9d969cfafULL, 8684724.0}}) {
    SCOPED_TRACE(golden.policy);
    Json result = simulate({"simulate", plan, "--config", config}, golden.policy);
    ASSERT_TRUE(result.is_object()) << out();
    ASSERT_EQ(result["jobs"].size(), 3000u);
    EXPECT_EQ(result["makespan_s"].get<double>(), golden.makespan_s);
    EXPECT_EQ(schedule_hash(result), golden.hash);
  }
}

TEST_F(SimulateGolden, AGeneratedTraceKeepsItsSummary) {
  std::string trace = dir_.write("trace.csv", sim::testing::generate_trace(3000, 1));
  const std::pair<std::string, std::string> kGolden[] = {
      {"fifo",
       R"({"makespan_s":18509060.0,"mean_wait_s":2187994.9483333337,"p95_wait_s":4012138.0,)"
       R"("utilization":0.7615308124777812})"},
      {"priority",
       R"({"makespan_s":19043668.0,"mean_wait_s":2422294.0633333335,"p95_wait_s":11954971.0,)"
       R"("utilization":0.7401525535941921})"},
      {"backfill",
       R"({"makespan_s":15975737.0,"mean_wait_s":405973.3786666667,"p95_wait_s":2216294.0,)"
       R"("utilization":0.8822891551106531})"}};
  for (const auto& [policy, summary] : kGolden) {
    SCOPED_TRACE(policy);
    EXPECT_EQ(simulate({"simulate", "--trace", trace}, policy), Json::parse(summary));
  }
}

}  // namespace
}  // namespace gpuq::cli
