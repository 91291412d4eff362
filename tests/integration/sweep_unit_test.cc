// SPDX-License-Identifier: Apache-2.0
// A sweep as one unit, end to end (docs/sweeps.md): `gpuq status` shows an unfinished array as
// one line (each element with --expand, every job with --json), `gpuq move NAME` moves its
// waiting elements, `gpuq show NAME` summarises it, and array.finished carries its counts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "base/time.h"

#include "harness.h"

namespace gpuq::testing {
namespace {

// The lines of `text` that contain `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) out.push_back(line);
  }
  return out;
}

TEST(SweepUnit, StatusShowsAnUnfinishedArrayAsOneLineAndMoveShowAndEventsTreatItAsOne) {
  Harness h("fake:2");
  h.start();
  ASSERT_EQ(h.gpuq({"drain"}).status, 0);  // nothing starts until the checks below are done
  ASSERT_EQ(h.gpuq({"submit", "--name", "solo", "--", "true"}).status, 0);
  auto submitted = h.gpuq({"submit", "--array", "0-3%2", "--name", "shards", "--", "sh", "-c",
                           "exit $(( GPUQ_ARRAY_INDEX == 2 ? 5 : 0 ))"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_EQ(submitted.out, "submitted array 1 (shards, 4 elements: jobs 2-5)\n");

  auto status = h.gpuq({"status"});
  ASSERT_EQ(status.status, 0) << status.err;
  auto array_lines = lines_with(status.out, "shards");
  ASSERT_EQ(array_lines.size(), 1u) << status.out;
  EXPECT_EQ(array_lines[0].rfind("2-5 ", 0), 0u) << array_lines[0];
  EXPECT_NE(array_lines[0].find("4 elements: 4 pending; at most 2 at once"), std::string::npos)
      << array_lines[0];
  EXPECT_EQ(lines_with(status.out, "solo").size(), 1u) << status.out;

  auto expanded = h.gpuq({"status", "--expand"});
  ASSERT_EQ(expanded.status, 0) << expanded.err;
  EXPECT_EQ(lines_with(expanded.out, "shards[").size(), 4u) << expanded.out;
  nlohmann::json all = h.gpuq_json({"status", "--json"});
  EXPECT_EQ(all["jobs"].size(), 5u) << "--json lists every job";
  ASSERT_EQ(all["arrays"].size(), 1u);
  EXPECT_EQ(all["arrays"][0]["name"], "shards");
  EXPECT_EQ(all["arrays"][0]["counts"], (nlohmann::json{{"pending", 4}}));
  EXPECT_EQ(all["arrays"][0]["first_job"], 2);
  EXPECT_EQ(all["arrays"][0]["last_job"], 5);

  // The whole array ahead of the job submitted before it: served first once undrained.
  auto moved = h.gpuq({"move", "shards", "--top"});
  ASSERT_EQ(moved.status, 0) << moved.err;
  EXPECT_EQ(moved.out, "moved array shards: 4 waiting elements\n");
  auto stray = h.gpuq({"move", "no-such-thing", "--top"});
  EXPECT_EQ(stray.status, 1);
  EXPECT_NE(stray.err.find("no job named 'no-such-thing'"), std::string::npos) << stray.err;

  ASSERT_EQ(h.gpuq({"undrain"}).status, 0);
  auto waited = h.gpuq({"wait", "--timeout", "60s", "shards", "solo"});
  EXPECT_EQ(waited.status, 1) << "shards[2] exits 5: " << waited.out << waited.err;

  int started = 0, first_solo_start = -1, finished_arrays = 0;
  nlohmann::json finished;
  for (const auto& e : h.events()) {
    std::string kind = e.value("kind", "");
    if (kind == "job.started" && e.value("job", 0) == 1) first_solo_start = started;
    started += kind == "job.started";
    if (kind == "array.finished") {
      ++finished_arrays;
      finished = e["data"];
    }
  }
  EXPECT_GE(first_solo_start, 2) << "at least the first two elements started before solo";
  EXPECT_EQ(finished_arrays, 1);
  EXPECT_EQ(finished, (nlohmann::json{{"array", 1}, {"name", "shards"}, {"size", 4},
                                      {"counts", {{"failed", 1}, {"succeeded", 3}}}}));

  auto shown = h.gpuq({"show", "shards"});
  ASSERT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("elements:   4: 3 succeeded, 1 failed\n"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("sweep:      array 0-3 (at most 2 at once)\n"), std::string::npos) << shown.out;
  auto failed = lines_with(shown.out, "shards[2]");
  ASSERT_EQ(failed.size(), 1u) << shown.out;
  EXPECT_EQ(failed[0], "4   shards[2]  5     1") << shown.out;
  nlohmann::json summary = h.gpuq_json({"show", "shards", "--json"});
  EXPECT_EQ(summary["counts"], (nlohmann::json{{"failed", 1}, {"succeeded", 3}}));
  EXPECT_EQ(summary["jobs"][2]["exit_code"], 5);
  EXPECT_EQ(summary["usage"]["running"], 0);
  EXPECT_FALSE(summary["usage"]["first_start"].is_null());
  EXPECT_FALSE(summary["usage"]["last_end"].is_null());
}

// ETAs count an array's cap as the scheduler does: on four free GPUs, an array of four capped
// at one runs its elements one after another, so each waits an estimate longer than the last.
TEST(SweepUnit, EtasOfACappedArraysElementsFollowItsCap) {
  Harness h("fake:4");
  h.start();
  ASSERT_EQ(h.gpuq({"submit", "--array", "0-3%1", "--name", "serial", "--est", "10m", "--", "sh",
                    "-c", "while [ ! -e go ]; do sleep 0.02; done"})
                .status,
            0);
  ASSERT_TRUE(h.wait_for(1, [](const nlohmann::json& j) { return j["state"] == "running"; }));
  auto status = h.gpuq_json({"status", "--json"});
  std::map<int64_t, int64_t> eta;
  for (const auto& j : status["jobs"]) {
    if (j["state"] == "pending" && j["eta"].is_string()) {
      eta[j["id"].get<int64_t>()] = gpuq::parse_rfc3339(j["eta"].get<std::string>()).value_or(0);
    }
    EXPECT_EQ(j.value("lanes", nlohmann::json::array()), nlohmann::json::array())
        << "the cap is not a lane the job asked for: " << j.dump();
  }
  ASSERT_EQ(eta.size(), 3u) << status.dump();
  EXPECT_NEAR(eta[3] - eta[2], 10 * 60'000, 1'000);
  EXPECT_NEAR(eta[4] - eta[3], 10 * 60'000, 1'000);
  std::ofstream(h.path("go")).close();  // the elements end
}

}  // namespace
}  // namespace gpuq::testing
