// SPDX-License-Identifier: Apache-2.0
// Job arrays in plans and script headers end to end (docs/sweeps.md): a plan's array queued as
// an array with its cap, a job after it started only once every element ended (read from the
// event log, not from timing), the same plan again queuing nothing, and `#gpuq array=` headers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "harness.h"

namespace gpuq::testing {
namespace {

void write_array_plan(const Harness& h) {
  std::ofstream(h.path("plan.json")) << R"({"jobs": [
    {"id": "shards", "command": ["sh", "-c", "sleep 0.2; echo shard {i} index $GPUQ_ARRAY_INDEX"],
     "gpus": 0, "array": "0-3", "max_running": 2},
    {"id": "report", "command": ["sh", "-c", "echo report"], "gpus": 0, "deps": ["shards"]}
  ]})";
}

TEST(PlanSweeps, ADependentOfAPlansArrayStartsOnlyAfterItsLastElementAndAResubmitAddsNothing) {
  Harness h("fake:2");
  h.start();
  write_array_plan(h);
  auto submitted = h.gpuq({"submit", "plan.json"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_EQ(submitted.out,
            "created array 1 (shards, 4 elements: jobs 1-4)\ncreated job 5 (report)\n");
  ASSERT_EQ(h.gpuq({"wait", "shards", "report", "--timeout", "60s"}).status, 0);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(h.gpuq({"logs", fmt::format("shards[{}]", i)}).out,
              fmt::format("shard {} index {}\n", i, i));
  }
  // From the event log: the report started after every element ended; never 3 elements at once.
  int64_t last_element_end = 0, report_start = 0;
  int running = 0, most = 0;
  for (const auto& e : h.events()) {
    std::string kind = e.value("kind", "");
    int64_t job = e["job"].is_number() ? e["job"].get<int64_t>() : 0;
    if (job >= 1 && job <= 4 && kind == "job.started") most = std::max(most, ++running);
    if (job >= 1 && job <= 4 && kind == "job.succeeded") {
      --running;
      last_element_end = e["seq"].get<int64_t>();
    }
    if (job == 5 && kind == "job.started") report_start = e["seq"].get<int64_t>();
    if (kind == "array.submitted") {
      EXPECT_EQ(e["data"], (nlohmann::json{
                               {"array", 1}, {"name", "shards"}, {"size", 4}, {"max_running", 2}}));
    }
  }
  EXPECT_EQ(most, 2);
  EXPECT_GT(last_element_end, 0);
  EXPECT_GT(report_start, last_element_end);

  // The same plan again: nothing new, the same ids; --id-only lists every element.
  size_t events_before = h.events().size();
  auto again = h.gpuq({"submit", "plan.json", "--id-only"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(again.out, "1\n2\n3\n4\n5\n");
  auto json_again = h.gpuq_json({"submit", "plan.json", "--json"});
  ASSERT_EQ(json_again["jobs"].size(), 2u);
  EXPECT_EQ(json_again["jobs"][0]["result"], "existing");
  EXPECT_EQ(json_again["jobs"][0]["id"], 1);
  EXPECT_EQ(json_again["jobs"][0]["array"]["size"], 4);
  EXPECT_EQ(json_again["jobs"][0]["jobs"][3], (nlohmann::json{{"id", 4}, {"name", "shards[3]"}}));
  EXPECT_EQ(json_again["jobs"][1],
            (nlohmann::json{{"name", "report"}, {"id", 5}, {"result", "existing"}}));
  EXPECT_EQ(h.events().size(), events_before);
  EXPECT_EQ(h.gpuq_json({"status", "--json"})["jobs"].size(), 5u);
}

TEST(PlanSweeps, AScriptWithArrayHeadersIsQueuedAsASweepWhoseElementsSeeTheirIndex) {
  Harness h("fake:2");
  h.start();
  std::ofstream(h.path("shard.sh")) << "#!/bin/bash\n#gpuq gpus=0\n#gpuq array=0-3\n"
                                       "echo index $GPUQ_ARRAY_INDEX arg $1\n";
  auto submitted = h.gpuq({"submit", "--name", "hdr", "shard.sh", "{i}"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_EQ(submitted.out, "submitted array 1 (hdr, 4 elements: jobs 1-4)\n");
  ASSERT_EQ(h.gpuq({"wait", "hdr", "--timeout", "60s"}).status, 0);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(h.gpuq({"logs", fmt::format("hdr[{}]", i)}).out,
              fmt::format("index {} arg {}\n", i, i));
  }
  // A flag replaces the header's sweep.
  auto flagged = h.gpuq({"submit", "--name", "flag", "--array", "5,6", "shard.sh", "{i}"});
  ASSERT_EQ(flagged.status, 0) << flagged.err;
  EXPECT_EQ(flagged.out, "submitted array 2 (flag, 2 elements: jobs 5-6)\n");
  ASSERT_EQ(h.gpuq({"wait", "flag", "--timeout", "60s"}).status, 0);
  EXPECT_EQ(h.gpuq({"logs", "flag[6]"}).out, "index 6 arg 6\n");
}

}  // namespace
}  // namespace gpuq::testing
