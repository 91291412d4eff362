// SPDX-License-Identifier: Apache-2.0
// A job's steps end to end, through the CLI and a real daemon (docs/jobs.md, "Steps"): `gpuq
// show` lists them and names the step that failed, `gpuq logs --step N` prints one step's
// output (also with -f), and `gpuq retry --from-start` runs every step again, for one job and
// for each element of an array.
#include <gtest/gtest.h>

#include <future>
#include <string>

#include "harness.h"

namespace gpuq::testing {
namespace {

const std::vector<std::string> kThreeSteps = {"--step", R"(bash -c "echo one")",
                                              "--step", R"(bash -c "echo two; exit 3")",
                                              "--step", R"(bash -c "echo three")"};

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

bool finished(const nlohmann::json& job) {
  std::string state = job["state"];
  return state == "failed" || state == "succeeded";
}

TEST(StepsFlow, ShowListsTheStepsAndLogsPrintsOneStepsOutput) {
  Harness h("fake:1");
  h.start();
  auto submitted = h.gpuq(with({"submit", "--name", "pipe"}, kThreeSteps));
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  EXPECT_EQ(h.gpuq({"wait", "pipe", "--timeout", "60s"}).status, 1);

  nlohmann::json job = h.show_ref("pipe");
  EXPECT_EQ(job["state"], "failed");
  EXPECT_NE(job["reason"].get<std::string>().find("step 1"), std::string::npos) << job["reason"];
  const nlohmann::json& steps = job["steps"];
  ASSERT_EQ(steps.size(), 3u) << job.dump();
  EXPECT_EQ(steps[0]["state"], "succeeded");
  EXPECT_EQ(steps[1]["state"], "failed");
  EXPECT_EQ(steps[1]["exit_code"], 3);
  EXPECT_EQ(steps[2]["state"], "pending");
  EXPECT_EQ(steps[0]["log_offset"], 0);
  EXPECT_EQ(steps[0]["log_end"], 4);  // "one\n"
  EXPECT_EQ(steps[1]["log_offset"], 4);
  EXPECT_TRUE(steps[1]["log_end"].is_null());  // the last step run 1 began
  EXPECT_TRUE(steps[2]["log_offset"].is_null());
  const nlohmann::json& recorded = job["runs"][0]["steps"];
  EXPECT_EQ(recorded[0]["log_end"], 4);
  EXPECT_EQ(recorded[1]["log_offset"], 4);

  auto shown = h.gpuq({"show", "pipe"});
  ASSERT_EQ(shown.status, 0) << shown.err;
  EXPECT_NE(shown.out.find("reason:"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find(job["reason"].get<std::string>()), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("STEP  NAME"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("failed     "), std::string::npos) << shown.out;

  EXPECT_EQ(h.gpuq({"logs", "pipe"}).out, "one\ntwo\n");
  EXPECT_EQ(h.gpuq({"logs", "pipe", "--step", "0"}).out, "one\n");
  EXPECT_EQ(h.gpuq({"logs", "pipe", "--step", "1"}).out, "two\n");
  auto none = h.gpuq({"logs", "pipe", "--step", "2"});
  EXPECT_EQ(none.status, 0);
  EXPECT_EQ(none.out, "");
  EXPECT_NE(none.err.find("no run of job pipe reached step 2"), std::string::npos) << none.err;
  auto wrong = h.gpuq({"logs", "pipe", "--step", "5"});
  EXPECT_NE(wrong.status, 0);
  EXPECT_NE(wrong.err.find("has 3 steps, numbered 0 to 2; there is no step 5"), std::string::npos)
      << wrong.err;
  int64_t plain = h.submit_sh("echo hi");
  ASSERT_TRUE(h.wait_for(plain, finished));
  auto stepless = h.gpuq({"logs", std::to_string(plain), "--step", "0"});
  EXPECT_NE(stepless.status, 0);
  EXPECT_NE(stepless.err.find("has no steps"), std::string::npos) << stepless.err;

  // A retry resumes at the failed step: step 0's output is still run 1's.
  ASSERT_EQ(h.gpuq({"retry", "pipe"}).status, 0);
  ASSERT_TRUE(h.wait_for(
      job["id"], [](const nlohmann::json& j) { return j["runs"].size() == 2 && finished(j); }));
  job = h.show_ref("pipe");
  EXPECT_EQ(job["runs"][1]["first_step"], 1);
  EXPECT_EQ(job["steps"][0]["run"], 1);
  EXPECT_EQ(job["steps"][1]["run"], 2);
  EXPECT_EQ(job["steps"][1]["log_offset"], 0);
  EXPECT_EQ(h.gpuq({"logs", "pipe", "--step", "1"}).out, "two\n");
  EXPECT_EQ(h.gpuq({"logs", "pipe", "--step", "1", "--run", "1"}).out, "two\n");
  // --from-start: every step again.
  ASSERT_EQ(h.gpuq({"retry", "pipe", "--from-start"}).status, 0);
  ASSERT_TRUE(h.wait_for(
      job["id"], [](const nlohmann::json& j) { return j["runs"].size() == 3 && finished(j); }));
  job = h.show_ref("pipe");
  EXPECT_EQ(job["runs"][2]["first_step"], 0);
  EXPECT_EQ(job["steps"][0]["run"], 3);
}

TEST(StepsFlow, LogsStepFollowsTheStepUntilItEnds) {
  Harness h("fake:1");
  h.start();
  // Step 2 waits a little before it writes, so that the daemon has recorded step 1's end (its
  // watch on the run's steps.json) before step 2's output is there to be mistaken for step 1's.
  auto submitted =
      h.gpuq({"submit", "--id-only", "--name", "slow", "--step", R"(bash -c "echo a")", "--step",
              R"(bash -c "echo b; while [ ! -e go ]; do sleep 0.05; done; echo c")", "--step",
              R"(bash -c "sleep 1; echo d")"});
  ASSERT_EQ(submitted.status, 0) << submitted.err;
  int64_t id = std::stoll(submitted.out);
  auto follower = std::async(std::launch::async, [&] {
    return h.gpuq({"logs", "slow", "--step", "1", "-f"});
  });
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["step"] == 1; }));
  h.touch("go");
  CliResult followed = follower.get();
  EXPECT_EQ(followed.status, 0) << followed.err;
  EXPECT_EQ(followed.out, "b\nc\n");
  ASSERT_TRUE(h.wait_for(id, finished));
  EXPECT_EQ(h.gpuq({"logs", "slow"}).out, "a\nb\nc\nd\n");
  EXPECT_EQ(h.gpuq({"logs", "slow", "--step", "2"}).out, "d\n");
}

TEST(StepsFlow, RetryFromStartOfAnArrayRunsEveryStepOfEachElementAgain) {
  Harness h("fake:2");
  h.start();
  auto submitted =
      h.gpuq_json(with({"submit", "--json", "--name", "grid", "--array", "0-1"}, kThreeSteps));
  ASSERT_EQ(submitted["jobs"].size(), 2u) << submitted.dump();
  std::vector<int64_t> ids;
  for (const auto& element : submitted["jobs"]) ids.push_back(element["id"]);
  for (int64_t id : ids) ASSERT_TRUE(h.wait_for(id, finished));
  ASSERT_EQ(h.gpuq({"retry", "grid", "--failed", "--from-start"}).status, 0);
  for (int64_t id : ids) {
    ASSERT_TRUE(h.wait_for(
        id, [](const nlohmann::json& j) { return j["runs"].size() == 2 && finished(j); }));
    nlohmann::json job = h.show(id);
    EXPECT_EQ(job["runs"][1]["first_step"], 0) << job.dump();
    EXPECT_EQ(job["steps"][0]["run"], 2);
    EXPECT_EQ(h.gpuq({"logs", std::to_string(id), "--step", "0"}).out, "one\n");
  }
  // Without --from-start each element resumes at the step that failed.
  ASSERT_EQ(h.gpuq({"retry", "grid"}).status, 0);
  for (int64_t id : ids) {
    ASSERT_TRUE(h.wait_for(
        id, [](const nlohmann::json& j) { return j["runs"].size() == 3 && finished(j); }));
    EXPECT_EQ(h.show(id)["runs"][2]["first_step"], 1);
  }
}

}  // namespace
}  // namespace gpuq::testing
