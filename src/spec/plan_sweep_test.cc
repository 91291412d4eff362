// SPDX-License-Identifier: Apache-2.0
// Job arrays and grids in plan files (plan_sweep.cc): "array", "grid" and "max_running" in a
// plan entry or its script's headers, every refusal at its file:line, and dependencies on an
// array's elements. Plans are checked from text with scripts from a map (no files).
#include <gtest/gtest.h>

#include <map>

#include "spec/plan.h"
#include "spec/plan_text_fixture.h"

namespace gpuq::spec {
namespace {

using nlohmann::json;

using PlanSweeps = PlanTextFixture;

TEST_F(PlanSweeps, AnArrayJobKeepsItsSweepInTheRequestAndItsElementsInSweeps) {
  PlanCheck plan = check(R"({"jobs": [
    {"id": "shards", "command": ["eval", "--shard", "{i}"], "array": "0-9%2", "est_hours": 1},
    {"id": "report", "command": ["report"], "deps": ["shards"], "est_hours": 1},
    {"id": "first", "command": ["look"], "deps": ["shards[0]"], "est_hours": 1}
  ]})");
  EXPECT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  const json& shards = plan.request["jobs"][0];
  EXPECT_EQ(shards["name"], "shards");
  EXPECT_EQ(shards["array"], "0-9%2");
  EXPECT_FALSE(shards.contains("max_running"));
  ASSERT_EQ(plan.sweeps.size(), 3u);
  ASSERT_TRUE(plan.sweeps[0]);
  EXPECT_EQ(plan.sweeps[0]->size(), 10u);
  EXPECT_EQ(plan.sweeps[0]->max_running, 2);
  EXPECT_FALSE(plan.sweeps[1]);
  EXPECT_EQ(plan.specs[0].name, "shards");
  EXPECT_EQ(plan.request["jobs"][1]["after"], json({"shards"}));
}

TEST_F(PlanSweeps, AGridIsAListOfParametersWithAnOptionalCap) {
  PlanCheck plan = check(R"({"jobs": [
    {"id": "lr", "command": ["train", "--lr", "{lr}"], "grid": ["lr=1e-4,3e-4", "seed=0..4"],
     "max_running": 4}
  ]})");
  EXPECT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  EXPECT_EQ(plan.request["jobs"][0]["grid"], json({"lr=1e-4,3e-4", "seed=0..4"}));
  EXPECT_EQ(plan.request["jobs"][0]["max_running"], 4);
  ASSERT_TRUE(plan.sweeps[0]);
  EXPECT_EQ(plan.sweeps[0]->size(), 10u);
  EXPECT_EQ(plan.sweeps[0]->max_running, 4);
}

TEST_F(PlanSweeps, EveryBadSweepIsAnErrorAtItsLineSayingWhatToWrite) {
  EXPECT_EQ(
      only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"],\n\"array\": \"9-0\"}]}"),
      "/p/plan.json:3: error: job 'a': \"array\": --array range '9-0' ends before it starts; "
      "write 0-9");
  EXPECT_EQ(only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"],\n\"array\": 5}]}"),
            "/p/plan.json:3: error: job 'a': \"array\" must be a string such as \"0-9\", "
            "\"0-99:2%4\" or \"1,4,9\"");
  EXPECT_EQ(only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"], \"array\": \"0-3\",\n"
                         "\"grid\": [\"lr=1,2\"]}]}"),
            "/p/plan.json:3: error: job 'a': give \"array\" or \"grid\", not both (a grid's "
            "elements are numbered as an array's)");
  EXPECT_EQ(
      only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"],\n\"max_running\": 2}]}"),
      "/p/plan.json:3: error: job 'a': \"max_running\" caps how many elements of a job array "
      "or grid run at once; add \"array\" or \"grid\", or remove it");
  EXPECT_EQ(only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"], \"array\": \"0-3\",\n"
                         "\"max_running\": 0}]}"),
            "/p/plan.json:3: error: job 'a': \"max_running\" must be a whole number from 1 to "
            "1000000, as 4");
  EXPECT_EQ(
      only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"], \"array\": \"0-3%2\",\n"
                   "\"max_running\": 3}]}"),
      "/p/plan.json:3: error: job 'a': the array says %2 and \"max_running\" 3; give one");
  EXPECT_EQ(only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"],\n"
                         "\"grid\": {\"lr\": [\"1\", \"2\"]}}]}"),
            "/p/plan.json:3: error: job 'a': \"grid\" must be a list of parameters in the order "
            "they vary, as [\"lr=1e-4,3e-4\", \"seed=0..4\"] (one NAME=VALUES string each)");
  EXPECT_EQ(only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"], \"grid\": [\n"
                         "\"lr=1,2\",\n\"seed=4..0\"]}]}"),
            "/p/plan.json:4: error: job 'a': \"grid\": --grid seed '4..0' ends before it starts; "
            "write 0..4");
  EXPECT_EQ(only_finding("{\"jobs\": [\n{\"id\": \"a\", \"command\": [\"x\"], \"grid\": [\n"
                         "\"lr=1,2\", \"lr=3\"]}]}"),
            "/p/plan.json:2: error: job 'a': \"grid\": --grid lr is given twice; give each "
            "parameter once, with all its values");
  EXPECT_EQ(
      only_finding("{\"jobs\": [\n{\"id\": \"a[1]\", \"command\": [\"x\"],\n\"array\": \"0-3\"}]}"),
      "/p/plan.json:3: error: job 'a[1]': an array's id cannot hold [ or ]: its elements are "
      "named ID[3] or ID[lr=3e-4]; choose another id");
}

TEST_F(PlanSweeps, AnArrayOverTheDefaultLimitIsAWarningWithItsCount) {
  EXPECT_EQ(only_finding(
                "{\"jobs\": [\n{\"id\": \"big\", \"command\": [\"x\"],\n\"array\": \"0-19999\"}]}"),
            "/p/plan.json:3: warning: job 'big': the array has 20000 elements, more than the "
            "default [sweeps] max_elements (10000): the daemon refuses it unless its config.toml "
            "allows that many");
  EXPECT_EQ(
      only_finding(
          "{\"jobs\": [\n{\"id\": \"huge\", \"command\": [\"x\"],\n\"array\": \"0-1999999\"}]}"),
      "/p/plan.json:3: error: job 'huge': \"array\": the array has 2000000 elements, more than "
      "[sweeps] max_elements (1000000); split it, or raise max_elements in config.toml");
}

TEST_F(PlanSweeps, ADependencyOnAnElementTheArrayLacksIsAnError) {
  EXPECT_EQ(
      only_finding("{\"jobs\": [\n{\"id\": \"shards\", \"command\": [\"x\"], \"array\": \"0-9\"},\n"
                   "{\"id\": \"r\", \"command\": [\"y\"], \"deps\": [\n\"shards[12]\"]}]}"),
      "/p/plan.json:4: error: job 'r': dep 'shards[12]': array 'shards' (line 2) has no such "
      "element; its 10 elements are shards[0] to shards[9]");
  EXPECT_EQ(
      findings("{\"jobs\": [\n{\"id\": \"g\", \"command\": [\"x\"], \"grid\": [\"lr=1,2\"]},\n"
               "{\"id\": \"r\", \"command\": [\"y\"], \"deps\": [\"g[lr=2]\"]}]}"),
      std::vector<std::string>{});
  EXPECT_EQ(
      only_finding("{\"jobs\": [\n{\"id\": \"shards\", \"command\": [\"x\"], \"array\": \"0-9\"},\n"
                   "{\"id\": \"shards[3]\", \"command\": [\"y\"]}]}"),
      "/p/plan.json:3: error: job 'shards[3]' has the name of an element of array 'shards' "
      "(line 2); rename it");
}

TEST_F(PlanSweeps, ACycleThroughAnElementIsFound) {
  auto all = findings(
      "{\"jobs\": [\n{\"id\": \"shards\", \"command\": [\"x\"], \"array\": \"0-3\", "
      "\"deps\": [\"a\"]},\n{\"id\": \"a\", \"command\": [\"y\"], \"deps\": [\"shards[1]\"]}]}");
  ASSERT_EQ(all.size(), 1u) << ::testing::PrintToString(all);
  EXPECT_EQ(all[0],
            "/p/plan.json:2: error: dependency cycle: shards -> a -> shards (each waits "
            "for the next, so none can start); remove one of these deps");
}

TEST_F(PlanSweeps, AScriptsHeadersMakeItsJobAnArrayAndThePlanEntryOverridesThem) {
  scripts_["/p/shard.sh"] = "#!/bin/bash\n#gpuq grid=lr=1,2\n#gpuq max_running=1\necho {lr}\n";
  PlanCheck plan = check(R"({"jobs": [{"id": "g", "script": "shard.sh"},
                                     {"id": "a", "script": "shard.sh", "array": "0-2"}]})");
  EXPECT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  ASSERT_TRUE(plan.sweeps[0] && plan.sweeps[1]);
  EXPECT_TRUE(plan.sweeps[0]->is_grid());
  EXPECT_EQ(plan.sweeps[0]->max_running, 1);
  EXPECT_EQ(plan.request["jobs"][0]["grid"], json({"lr=1,2"}));
  EXPECT_FALSE(plan.sweeps[1]->is_grid()) << "the entry's array replaces the header's grid";
  EXPECT_EQ(plan.sweeps[1]->size(), 3u);
  EXPECT_FALSE(plan.request["jobs"][1].contains("grid"));

  scripts_["/p/bad.sh"] = "#!/bin/bash\n#gpuq array=0-3\n#gpuq max_running=2\necho\n";
  EXPECT_EQ(only_finding(R"({"jobs": [{"id": "b", "script": "bad.sh", "array": "0-3%3"}]})"),
            "/p/bad.sh:3: error: job 'b': the array says %3 and \"max_running\" 2; give one");
}

}  // namespace
}  // namespace gpuq::spec
