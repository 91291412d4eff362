// SPDX-License-Identifier: Apache-2.0
// `gpuq report` against a scripted daemon (FakeTransport): the request it sends, its usage
// errors, and the table and CSV it prints from GET /v1/report's answer (docs/api.md).
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

class ReportCommand : public testing::ScriptedCli {};

constexpr const char* kReport =
    R"({"since_ms":1764547200000,"until_ms":1765152000000,"gpus":2,"machine_gpu_hours":336.0,)"
    R"("by":"user","groups":[{"key":"ann","gpu_hours":100.5,"share":0.2991,"runs":12,"jobs":10},)"
    R"({"key":"bob, jr","gpu_hours":20.0,"share":0.0595,"runs":1,"jobs":1}],)"
    R"("wait":{"by_user":[{"key":"ann","p50_s":60,"p90_s":3600,"max_s":7200,"jobs":10}],)"
    R"("by_gpus":[{"gpus":1,"p50_s":30,"p90_s":90,"max_s":90,"jobs":11}]},)"
    R"("idle_held_gpu_hours":4.25,"idle_utilization":5,)"
    R"("lost_gpu_hours":{"failed":2.5,"timed-out":0,"preempted":1,"cancelled":0,"lost":0},)"
    R"("idle_while_waiting_gpu_hours":0.5})";

TEST_F(ReportCommand, AsksForTheLastWeekByUserAndPrintsATable) {
  script({{"/v1/report?since=7d&by=user", json_answer(200, kReport)}});
  EXPECT_EQ(run({"report"}), kExitOk);
  EXPECT_EQ(out(),
            "GPU usage 2025-12-01T00:00:00.000Z to 2025-12-08T00:00:00.000Z (7d): 2 GPUs, 336.0 "
            "GPU-hours\n\n"
            "USER     GPU-HOURS  SHARE  RUNS  JOBS\n"
            "ann      100.5      29.9%  12    10\n"
            "bob, jr  20.0       5.9%   1     1\n"
            "total 120.5 GPU-hours used, 35.9% of the machine\n\n"
            "WAITED    JOBS  P50    P90    MAX\n"
            "user ann  10    1m00s  1h00m  2h00m\n"
            "gpus=1    11    30s    1m30s  1m30s\n\n"
            "idle while held: 4.2 GPU-hours (samples at or below 5% utilisation)\n"
            "lost: 3.5 GPU-hours (failed 2.5, preempted 1.0)\n"
            "free while jobs waited: 0.5 GPU-hours\n");
  EXPECT_EQ(err(), "");
}

TEST_F(ReportCommand, ByUserShowsEachUsersPartOfWhatWasUsedBesideTheirFairShare) {
  std::string report = kReport;
  auto replace = [&](const std::string& from, const std::string& to) {
    report.replace(report.find(from), from.size(), to);
  };
  replace(R"("runs":12,"jobs":10})", R"("runs":12,"jobs":10,"used_share":0.834,"fair_share":0.5})");
  replace(R"("runs":1,"jobs":1})", R"("runs":1,"jobs":1,"used_share":0.166,"fair_share":null})");
  script({{"/v1/report?since=7d&by=user", json_answer(200, report)}});
  EXPECT_EQ(run({"report"}), kExitOk);
  EXPECT_NE(out().find("USER     GPU-HOURS  SHARE  RUNS  JOBS  OF USED  FAIR SHARE\n"
                       "ann      100.5      29.9%  12    10    83.4%    50.0%\n"
                       "bob, jr  20.0       5.9%   1     1     16.6%    -\n"),
            std::string::npos)
      << out();
}

TEST_F(ReportCommand, CsvHasAHeaderAndOneRowPerGroup) {
  script({{"/v1/report?since=2025-12-01T00%3A00%3A00%2B01%3A00&until=1d&by=name", json_answer(200, kReport)}});
  EXPECT_EQ(run({"report", "--since", "2025-12-01T00:00:00+01:00", "--until", "1d", "--by", "name", "--csv"}),
            kExitOk);
  EXPECT_EQ(out(), "user,gpu_hours,share,runs,jobs\nann,100.5,0.2991,12,10\n\"bob, jr\",20.0,0.0595,1,1\n");
}

TEST_F(ReportCommand, ACsvNameThatASpreadsheetWouldRunIsText) {
  std::string report = kReport;
  report.replace(report.find("\"bob, jr\""), 9, R"x("=HYPERLINK(\"http://x\")")x");
  report.replace(report.find("\"ann\""), 5, "\"@SUM(1)\"");
  script({{"/v1/report?since=7d&by=name", json_answer(200, report)}});
  EXPECT_EQ(run({"report", "--by", "name", "--csv"}), kExitOk);
  EXPECT_EQ(out(), "user,gpu_hours,share,runs,jobs\n'@SUM(1),100.5,0.2991,12,10\n"
                   "\"'=HYPERLINK(\"\"http://x\"\")\",20.0,0.0595,1,1\n");
}

TEST_F(ReportCommand, JsonPrintsTheAnswerAsItCame) {
  script({{"/v1/report?since=30d&by=gpu", json_answer(200, kReport)}});
  EXPECT_EQ(run({"report", "--since", "30d", "--by", "gpu", "--json"}), kExitOk);
  EXPECT_EQ(Json::parse(out()), Json::parse(kReport));
}

TEST_F(ReportCommand, BadFlagsAreUsageErrors) {
  expect_usage_error({"report", "--by", "team"}, "--by team: group by user, name, outcome or gpu");
  expect_usage_error({"report", "--since", "last week"}, "--since last week: give a duration");
  expect_usage_error({"report", "--until", "tomorrow"}, "--until tomorrow");
  expect_usage_error({"report", "--json", "--csv"}, "give --json or --csv, not both");
}

}  // namespace
}  // namespace gpuq::cli
