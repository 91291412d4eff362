// SPDX-License-Identifier: Apache-2.0
// The CLI and a job's steps (docs/jobs.md, "Steps"), against a scripted daemon: `gpuq show`'s
// table of steps, `gpuq logs --step` and `gpuq retry --from-start` of an array.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

class StepsCli : public testing::ScriptedCli {};

// Job 7, "pipe", of three steps: run 1 did s0 and failed in s1 (exit 3); `state` and `reason` as
// given.
std::string pipe_json(std::string_view state, std::string_view reason,
                      std::string_view step_now = "null", std::string_view s1_state = "failed") {
  bool s1_running = s1_state == "running";
  return fmt::format(
      R"({{"id":7,"name":"pipe","state":"{0}","priority":50,"gpus_requested":0,"reason":"{1}",)"
      R"("submitted_at_ms":1000,"command":"s0 ; s1 ; s2","cwd":"/x","step":{2},)"
      R"("steps":[)"
      R"({{"index":0,"name":"s0","state":"succeeded","started":"2026-11-29T10:00:00.000Z",)"
      R"("ended":"2026-11-29T10:00:02.000Z","exit_code":0,"signal":null,"run":1,"image":null,"log_offset":0,"log_end":4}},)"
      R"({{"index":1,"name":"s1","state":"{3}","started":"2026-11-29T10:00:02.000Z",)"
      R"("ended":{4},"exit_code":{5},"signal":null,"run":1,"image":null,"log_offset":4,"log_end":null}},)"
      R"({{"index":2,"name":"s2","state":"pending","started":null,"ended":null,"exit_code":null,"signal":null,)"
      R"("run":null,"image":null,"log_offset":null,"log_end":null}}],)"
      R"("runs":[{{"number":1,"gpus":[],"started_at":"2026-11-29T10:00:00.000Z","started_at_ms":1795989600000,)"
      R"("ended_at_ms":{6},"exit_code":{5},"signal":null,"outcome":"{7}","first_step":0,"steps":[)"
      R"({{"index":0,"state":"succeeded","started_at_ms":1795989600000,"ended_at_ms":1795989602000,"exit_code":0,)"
      R"("signal":null,"log_offset":0,"log_end":4}},)"
      R"({{"index":1,"state":"{3}","started_at_ms":1795989602000,"ended_at_ms":{8},"exit_code":{5},)"
      R"("signal":null,"log_offset":4,"log_end":null}},)"
      R"({{"index":2,"state":"pending","started_at_ms":0,"ended_at_ms":0,"exit_code":null,"signal":null,)"
      R"("log_offset":0,"log_end":null}}]}}]}})",
      state, reason, step_now, s1_state, s1_running ? "null" : R"("2026-11-29T10:00:05.000Z")",
      s1_running ? "null" : "3", s1_running ? "null" : "1795989605000",
      s1_running ? "running" : "failed", s1_running ? "0" : "1795989605000");
}

TEST_F(StepsCli, ShowListsTheStepsAndSaysWhichFailed) {
  script({{"/v1/jobs/pipe",
           json_answer(200, pipe_json("failed", "step 1 (s1) failed: exit code 3"))}});
  EXPECT_EQ(run({"show", "pipe"}), 0) << err();
  EXPECT_NE(out().find("reason:     step 1 (s1) failed: exit code 3\n"), std::string::npos)
      << out();
  EXPECT_EQ(out().find("step:"), std::string::npos) << out();  // nothing runs now
  EXPECT_NE(out().find("STEP  NAME  STATE      STARTED                   DURATION  EXIT  RUN\n"
                       "0     s0    succeeded  2026-11-29T10:00:00.000Z  2s        0     1\n"
                       "1     s1    failed     2026-11-29T10:00:02.000Z  3s        3     1\n"
                       "2     s2    pending    -                         -         -     -\n"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("RUN  GPUS"), std::string::npos) << out();  // the runs' table follows
}

TEST_F(StepsCli, ShowSaysWhichStepRunsNow) {
  script({{"/v1/jobs/pipe", json_answer(200, pipe_json("running", "", "1", "running"))}});
  process_.wall = 1795989612000;  // 10 s into s1
  EXPECT_EQ(run({"show", "pipe"}), 0) << err();
  EXPECT_NE(out().find("step:       1 (s1), running (steps 0 to 2)\n"), std::string::npos) << out();
  EXPECT_NE(out().find("1     s1    running    2026-11-29T10:00:02.000Z  10s       -     1\n"),
            std::string::npos)
      << out();
}

TEST_F(StepsCli, ShowJsonIsTheDaemonsAnswer) {
  std::string body = pipe_json("failed", "step 1 (s1) failed: exit code 3");
  script({{"/v1/jobs/pipe", json_answer(200, body)}});
  EXPECT_EQ(run({"show", "pipe", "--json"}), 0);
  EXPECT_EQ(out(), body + "\n");
}

TEST(ShowWithoutSteps, PrintsNoStepsTable) {
  testing::FakeProcess process;
  process.daemon.handler = [](const HttpRequest&) -> Result<HttpResponse> {
    return json_answer(
        200,
        R"({"id":3,"name":null,"state":"succeeded","reason":"","runs":[],"steps":[],"step":null})");
  };
  EXPECT_EQ(run_cli({"--home", "/tmp/x", "show", "3"}, Hooks{}, process.io), 0);
  EXPECT_EQ(process.out.str().find("STEP"), std::string::npos) << process.out.str();
}

HttpResponse step_log(std::string body, int size, int run, std::string step_state,
                      std::string job_state) {
  return json_answer(200, std::move(body),
                     {{"x-gpuq-log-size", std::to_string(size)},
                      {"x-gpuq-run", std::to_string(run)},
                      {"x-gpuq-step-state", std::move(step_state)},
                      {"x-gpuq-job-state", std::move(job_state)}});
}

TEST_F(StepsCli, LogsStepPrintsOnlyThatStepsBytes) {
  script({{"/v1/jobs/pipe/log?offset=0&step=1", step_log("tw", 4, 1, "failed", "failed")},
          {"/v1/jobs/pipe/log?offset=2&run=1&step=1", step_log("o\n", 4, 1, "failed", "failed")}});
  EXPECT_EQ(run({"logs", "pipe", "--step", "1"}), 0) << err();
  EXPECT_EQ(out(), "two\n");
  EXPECT_EQ(err(), "");
}

TEST_F(StepsCli, LogsStepFollowWaitsForARunToReachTheStepAndStopsWhenItEnds) {
  script(
      {{"/v1/jobs/pipe/log?offset=0&step=2", step_log("", 0, 0, "pending", "running")},
       {"/v1/jobs/pipe/log?offset=0&step=2", step_log("a", 1, 2, "running", "running")},
       {"/v1/jobs/pipe/log?offset=1&run=2&step=2", step_log("", 1, 2, "running", "running")},
       {"/v1/jobs/pipe/log?offset=1&run=2&step=2", step_log("b", 2, 2, "succeeded", "running")}});
  EXPECT_EQ(run({"logs", "pipe", "--step", "2", "-f"}), 0) << err();
  EXPECT_EQ(out(), "ab");
  EXPECT_EQ(process_.sleeps.size(), 3u);  // before the step was reached, and twice while it ran
  EXPECT_TRUE(steps_.empty());
}

TEST_F(StepsCli, LogsStepSaysWhenNoRunReachedTheStep) {
  script({{"/v1/jobs/pipe/log?offset=0&step=2", step_log("", 0, 0, "pending", "running")}});
  EXPECT_EQ(run({"logs", "pipe", "--step", "2"}), 0);
  EXPECT_EQ(err(),
            "gpuq: job pipe has not reached step 2 yet; gpuq logs pipe --step 2 -f waits for it\n");
}

TEST_F(StepsCli, LogsStepPassesTheDaemonsErrorOn) {
  std::string message =
      "job 7 (pipe) has 3 steps, numbered 0 to 2; there is no step 5: ask for one of those (gpuq "
      "show 7 lists them)";
  script(
      {{"/v1/jobs/pipe/log?offset=0&step=5",
        json_answer(400, fmt::format(R"({{"error":{{"code":"invalid_argument","message":"{}"}}}})",
                                     message))}});
  EXPECT_NE(run({"logs", "pipe", "--step", "5"}), 0);
  EXPECT_NE(err().find(message), std::string::npos) << err();
  expect_usage_error({"logs", "pipe", "--step", "-1"}, "--step must be 0 or more");
}

TEST_F(StepsCli, RetryFromStartOfAnArraySendsItWithTheArraysRetry) {
  std::string acted =
      R"({"array":{"id":2,"name":"grid"},"jobs":[{"id":11,"state":"pending"}],"refused":[]})";
  script({{"/v1/jobs/grid/retry",
           json_answer(404, R"({"error":{"code":"not_found","message":"no job grid"}})")},
          {"/v1/arrays/grid/retry", json_answer(200, acted)}});
  EXPECT_EQ(run({"retry", "grid", "--from-start", "--failed"}), 0) << err();
  EXPECT_EQ(sent_body(0), Json::parse(R"({"from_start":true})"));
  EXPECT_EQ(sent_body(1), Json::parse(R"({"failed":true,"from_start":true,"brief":true})"))
      << "the table prints ids only: it asks for them alone";
  EXPECT_EQ(out(), "requeued job 11\n");
}

}  // namespace
}  // namespace gpuq::cli
