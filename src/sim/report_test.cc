// SPDX-License-Identifier: Apache-2.0
#include "sim/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuq::sim {
namespace {

using ::testing::HasSubstr;

SimResult sample() {
  SimResult r;
  r.makespan_ms = 5400000;
  r.utilization = 0.875;
  r.mean_wait_s = 90;
  r.p95_wait_s = 1800;
  r.jobs = {{"eval", 3600000, 5400000, {1}}, {"train", 0, 3600000, {0, 1}}};
  return r;
}

TEST(Report, JsonKeysAreTheContract) {
  nlohmann::json j = result_to_json(sample(), true);
  EXPECT_EQ(j, nlohmann::json::parse(R"({
    "makespan_s": 5400.0, "utilization": 0.875, "mean_wait_s": 90.0, "p95_wait_s": 1800.0,
    "jobs": [{"name": "eval", "start_s": 3600.0, "end_s": 5400.0, "gpus": [1]},
             {"name": "train", "start_s": 0.0, "end_s": 3600.0, "gpus": [0, 1]}]})"));
  nlohmann::json summary = result_to_json(sample(), false);
  EXPECT_FALSE(summary.contains("jobs"));
  EXPECT_EQ(summary.size(), 4u);
}

TEST(Report, TableHasJobsAndSummary) {
  std::string table = format_result_table(sample(), true);
  EXPECT_THAT(table, HasSubstr("JOB"));
  EXPECT_LT(table.find("train"), table.find("eval"));  // in start order
  EXPECT_THAT(table, HasSubstr("0,1"));
  EXPECT_THAT(table, HasSubstr("makespan     1h30m"));
  EXPECT_THAT(table, HasSubstr("utilization  87.5%"));
  EXPECT_THAT(table, HasSubstr("mean wait    1m30s"));
  EXPECT_THAT(table, HasSubstr("p95 wait     30m00s"));
  std::string summary = format_result_table(sample(), false);
  EXPECT_EQ(summary.find("train"), std::string::npos);
}

TEST(Report, AFirstLookIsShownForTheJobsThatAskedForOne) {
  SimResult r = sample();
  r.jobs[1].first_look_ms = 900000;  // train: a quarter of the way in
  nlohmann::json j = result_to_json(r, true);
  EXPECT_EQ(j["jobs"][1]["first_look_s"], 900.0);
  EXPECT_FALSE(j["jobs"][0].contains("first_look_s"));
  std::string table = format_result_table(r, true);
  EXPECT_THAT(table, HasSubstr("JOB       START       END  FIRST LOOK  GPUS\n"
                               "train        0s     1h00m      15m00s  0,1\n"
                               "eval      1h00m     1h30m           -  1\n"));
  EXPECT_EQ(format_result_table(sample(), true).find("FIRST LOOK"), std::string::npos);
}

}  // namespace
}  // namespace gpuq::sim
