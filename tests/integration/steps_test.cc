// SPDX-License-Identifier: Apache-2.0
// Jobs of steps through a real daemon (docs/jobs.md, "Steps"): a four-step job preempted with
// `restart` during step 2 runs steps 0 and 1 once and resumes at step 2; each step sees its
// index and count; the job's steps, their states and the events come back in order.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace gpuq::testing {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Steps, AFourStepJobRestartedDuringStepTwoRunsStepsZeroAndOneOnce) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[cleanup]\npoll = \"20ms\"\n";
  h.start();
  std::string log = h.path("ran");
  // Each step appends its index to `ran`; step 2 waits for a file only in its first run, so the
  // preemption surely finds it running.
  auto step = [&](int i, const std::string& extra) {
    return fmt::format("bash -c 'echo {i}:$GPUQ_STEP_INDEX/$GPUQ_STEP_COUNT:$GPUQ_RUN_NUMBER >> {log}; {extra}'",
                       fmt::arg("i", i), fmt::arg("log", log), fmt::arg("extra", extra));
  };
  std::string wait = fmt::format("if [ $GPUQ_RUN_NUMBER = 1 ]; then touch {0}; while true; do sleep 0.05; done; fi",
                                 h.path("in-step-2"));
  auto submitted = h.gpuq_json({"submit", "--json", "--name", "pipe", "--gpus", "1", "--priority", "low",
                                "--preempt", "restart", "--step", step(0, "true"), "--step", step(1, "true"),
                                "--step", step(2, wait), "--step", step(3, "true")});
  int64_t id = submitted["id"];
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(h.path("in-step-2")); }, 60'000))
      << h.show(id).dump(2);
  auto running = h.show(id);
  EXPECT_EQ(running["step"], 2) << running.dump(2);
  int64_t high = h.submit_sh("true", {"--gpus", "1", "--priority", "high"});
  ASSERT_TRUE(h.wait_for(high, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }, 60'000));
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }, 60'000))
      << h.show(id).dump(2);

  EXPECT_EQ(read_file(log), "0:0/4:1\n1:1/4:1\n2:2/4:1\n2:2/4:2\n3:3/4:2\n")
      << "steps 0 and 1 ran once; run 2 began at step 2";
  auto job = h.show(id);
  ASSERT_EQ(job["runs"].size(), 2u);
  EXPECT_EQ(job["runs"][0]["outcome"], "preempted");
  EXPECT_EQ(job["runs"][1]["first_step"], 2);
  ASSERT_EQ(job["steps"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(job["steps"][i]["state"], "succeeded") << job["steps"].dump(2);
  EXPECT_EQ(job["steps"][1]["run"], 1);
  EXPECT_EQ(job["steps"][2]["run"], 2);
  // Every step's start and end, in order: step 2 started twice (stopped, then run again).
  std::vector<std::string> seen;
  for (const auto& e : h.events()) {
    if (e["job"] != id) continue;
    if (e["kind"] == "job.step_started") seen.push_back(fmt::format("start {}", e["data"]["step"].get<int>()));
    if (e["kind"] == "job.step_finished") {
      seen.push_back(fmt::format("end {} {}", e["data"]["step"].get<int>(), e["data"]["state"].get<std::string>()));
    }
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"start 0", "end 0 succeeded", "start 1", "end 1 succeeded", "start 2",
                                            "end 2 stopped", "start 2", "end 2 succeeded", "start 3",
                                            "end 3 succeeded"}));
}

}  // namespace
}  // namespace gpuq::testing
