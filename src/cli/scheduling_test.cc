// SPDX-License-Identifier: Apache-2.0
// The scheduling commands and flags of the CLI against a scripted daemon (FakeTransport):
// submit's scheduling flags and their JSON, plans, hold/release/retry/move/drain, the status
// screen's lanes, drain line and ETAs, lint and simulate.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "base/time.h"
#include "cli/app.h"
#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;
using testing::json_answer;

using testing::TempDir;

class Scheduling : public testing::ScriptedCli {
 protected:

  TempDir dir_;
};

std::string job_json(int id, std::string_view state, std::string_view extra = "") {
  return fmt::format(R"({{"id":{},"name":null,"state":"{}","priority":50,"gpus_requested":1,)"
                     R"("reason":"","submitted_at_ms":1795949700000,"command":"train.sh",)"
                     R"("cwd":"/x","runs":[]{}}})",
                     id, state, extra);
}

// --- submit: flags to JSON ---------------------------------------------------------------

TEST_F(Scheduling, EverySchedulingFlagMapsToItsField) {
  script({{"/v1/jobs", json_answer(201, job_json(7, "held"))}});
  // clang-format off
  std::vector<std::string> args = {
      "submit",
      "--after", "prep", "--after", "3", "--after-any", "a", "--after-notok", "b",
      "--requires", "test -f x", "--requires", "true", "--done-if", "test -s y",
      "--wait-file", "ckpt/READY", "--lane", "net", "--lane", "disk",
      "--retries", "2", "--retry-delay", "30s", "--timeout", "12h", "--est", "3h",
      "--gpu-mem", "20000", "--share", "--not-before", "2026-11-29T22:00:00Z", "--hold",
      "--", "python", "x.py"};
  // clang-format on
  EXPECT_EQ(run(args), 0) << err();
  EXPECT_EQ(out(), "submitted job 7\n");
  Json body = sent_body();
  EXPECT_EQ(body["argv"], Json::parse(R"(["python","x.py"])"));
  EXPECT_EQ(body["after"], Json::parse(R"(["prep","3"])"));
  EXPECT_EQ(body["after_any"], Json::parse(R"(["a"])"));
  EXPECT_EQ(body["after_notok"], Json::parse(R"(["b"])"));
  EXPECT_EQ(body["requires"], Json::parse(R"(["test -f x","true"])"));
  EXPECT_EQ(body["done_if"], "test -s y");
  EXPECT_EQ(body["wait_file"], Json::parse(R"(["ckpt/READY"])"));
  EXPECT_EQ(body["lanes"], Json::parse(R"(["net","disk"])"));
  EXPECT_EQ(body["retries"], 2);
  EXPECT_EQ(body["retry_delay"], "30s");
  EXPECT_EQ(body["timeout"], "12h");
  EXPECT_EQ(body["est"], "3h");
  EXPECT_EQ(body["gpu_mem"], 20000);
  EXPECT_EQ(body["share"], true);
  EXPECT_EQ(body["not_before"], "2026-11-29T22:00:00.000Z");
  EXPECT_EQ(body["hold"], true);
}

TEST_F(Scheduling, FlagsNotGivenAreNotSent) {
  script({{"/v1/jobs", json_answer(201, job_json(7, "pending"))}});
  EXPECT_EQ(run({"submit", "--", "true"}), 0);
  Json body = sent_body();
  for (const char* key : {"after", "after_any", "after_notok", "requires", "done_if", "wait_file",
                          "lanes", "lane", "retries", "retry_delay", "timeout", "est", "gpu_mem",
                          "share", "not_before", "hold", "replace"}) {
    EXPECT_FALSE(body.contains(key)) << key;
  }
  EXPECT_FALSE(body.contains("gpus")) << "unsaid: the spec's 0 (1 in the GPU lane)";
}

TEST(SubmitRequest, NotBeforeFromNowIsAnAbsoluteTime) {
  SubmitOptions options;
  options.words = {"true"};
  options.command_mode = true;
  options.not_before = "+2h";
  int64_t now = 1'795'949'736'123;
  auto request = build_submit_request(options, {}, "/tmp", now);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ((*request)["not_before"], format_rfc3339(now + 2 * 3'600'000));
  options.not_before = "2026-11-29T23:00:00+01:00";
  request = build_submit_request(options, {}, "/tmp", now);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ((*request)["not_before"], "2026-11-29T22:00:00.000Z");
}

TEST(SubmitRequest, AScriptsSweepHeadersAreSentAndTheFlagsReplaceThem) {
  TempDir dir;
  SubmitOptions options;
  options.words = {dir.write("shard.sh", "#!/bin/bash\n#gpuq array=0-9%2\necho {i}\n")};
  auto request = build_submit_request(options, {}, "/tmp", 0);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ((*request)["array"], "0-9%2");
  options.max_running = 3;  // the cap alone: the header's %2 gives way
  request = build_submit_request(options, {}, "/tmp", 0);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_EQ((*request)["array"], "0-9");
  EXPECT_EQ((*request)["max_running"], 3);
  options.max_running.reset();
  options.grid = {"lr=1,2"};  // a sweep flag replaces the header's sweep
  request = build_submit_request(options, {}, "/tmp", 0);
  ASSERT_TRUE(request) << request.error().message;
  EXPECT_FALSE(request->contains("array"));
  EXPECT_EQ((*request)["grid"], Json::parse(R"(["lr=1,2"])"));

  SubmitOptions plain;
  plain.words = {dir.write("plain.sh", "#!/bin/bash\necho\n")};
  plain.max_running = 2;
  auto refused = build_submit_request(plain, {}, "/tmp", 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message,
            "--max-running caps an array or a grid: give --array or --grid (or array= or grid= "
            "in the script's #gpuq header)");
}

TEST_F(Scheduling, BadSchedulingFlagsAreUsageErrors) {
  expect_usage_error({"submit", "--timeout", "5 parsecs", "--", "true"}, "--timeout: bad duration");
  expect_usage_error({"submit", "--est", "3x", "--", "true"}, "--est: bad duration '3x'");
  expect_usage_error({"submit", "--retry-delay", "", "--", "true"}, "--retry-delay");
  expect_usage_error({"submit", "--retries", "-1", "--", "true"}, "--retries must be 0 or more");
  expect_usage_error({"submit", "--retries", "two", "--", "true"}, "--retries");
  expect_usage_error({"submit", "--gpu-mem", "-5", "--", "true"}, "--gpu-mem must be 0 or more");
  expect_usage_error({"submit", "--not-before", "tomorrow", "--", "true"},
                     "bad --not-before 'tomorrow'");
  expect_usage_error({"submit", "--not-before", "+2 parsecs", "--", "true"},
                     "bad --not-before '+2 parsecs'");
  expect_usage_error({"submit", "--done-if", "", "--", "true"}, "--done-if needs a shell command");
  expect_usage_error({"submit", "--after", "", "--", "true"}, "--after needs a value");
  expect_usage_error({"submit", "--replace", "--", "true"}, "--replace is for plans");
}

TEST_F(Scheduling, ListFlagsTakeOneValueEach) {
  // `--lane net script.sh` must not swallow the script.
  std::string script_path = dir_.write("job.sh", "#!/bin/bash\necho hi\n");
  script({{"/v1/jobs", json_answer(201, job_json(7, "pending"))}});
  EXPECT_EQ(run({"submit", "--lane", "net", script_path, "--lane", "x"}), 0) << err();
  Json body = sent_body();
  EXPECT_EQ(body["lanes"], Json::parse(R"(["net"])"));
  EXPECT_EQ(body["script"]["args"], Json::parse(R"(["--lane","x"])"));  // the script's own
}

TEST_F(Scheduling, FlagsOverrideTheScriptsHeader) {
  std::string script_path = dir_.write("eval.sh",
                                       "#!/bin/bash\n"
                                       "#gpuq gpus=2 retries=1 timeout=1h name=eval-a15\n"
                                       "#gpuq lane=net after=train-a15\n"
                                       "python eval.py\n");
  script({{"/v1/jobs", json_answer(201, job_json(7, "pending"))},
          {"/v1/jobs", json_answer(201, job_json(8, "pending"))}});
  EXPECT_EQ(run({"submit", script_path}), 0) << err();
  Json header_only = sent_body(0);
  EXPECT_EQ(header_only["gpus"], 2);
  EXPECT_EQ(header_only["name"], "eval-a15");
  EXPECT_TRUE(header_only.contains("after")) << header_only;
  EXPECT_TRUE(header_only.contains("timeout") || header_only.contains("timeout_ms"));

  EXPECT_EQ(run({"submit", "--gpus", "1", "--name", "other", "--lane", "disk", "--timeout", "2h",
                 "--retries", "0", script_path}),
            0)
      << err();
  Json overridden = sent_body(1);
  EXPECT_EQ(overridden["gpus"], 1);
  EXPECT_EQ(overridden["name"], "other");
  EXPECT_EQ(overridden["lanes"], Json::parse(R"(["disk"])"));
  EXPECT_FALSE(overridden.contains("lane"));
  EXPECT_EQ(overridden["timeout"], "2h");
  EXPECT_FALSE(overridden.contains("timeout_ms"));
  EXPECT_EQ(overridden["retries"], 0);
  EXPECT_EQ(overridden["after"], header_only["after"]);  // not given: the header's stays
}

// --- plans -------------------------------------------------------------------------------

TEST_F(Scheduling, PlanTakesNoJobFlagsOrArguments) {
  std::string plan = dir_.write("plan.json", R"({"jobs":[{"id":"prep","command":["true"]}]})");
  expect_usage_error({"submit", "--gpus", "2", plan}, "--gpus with a plan");
  expect_usage_error({"submit", "--after", "x", "--hold", plan}, "--after, --hold with a plan");
  expect_usage_error({"submit", plan, "extra"}, "a plan takes no arguments");
  expect_usage_error({"submit", plan, "--gpus", "2"}, "--gpus with a plan");
  expect_usage_error({"submit", plan, "--cwd"}, "--cwd needs a directory");
}

TEST_F(Scheduling, SendPlanPrintsOneLinePerJob) {
  script(
      {{"/v1/plans", json_answer(200, R"({"jobs":[{"name":"train-a15","id":7,"result":"created"},)"
                                      R"({"name":"prep","id":3,"result":"existing"},)"
                                      R"({"name":"eval","id":9,"result":"replaced"}]})")}});
  Context ctx(process_.io, "/tmp/gpuq-fake-home", true);
  SubmitOptions options;
  options.replace = true;
  EXPECT_EQ(send_plan(ctx, Json::parse(R"({"jobs":[{"name":"prep"}]})"), options), 0);
  EXPECT_EQ(out(), "created job 7 (train-a15)\nexisting job 3 (prep)\nreplaced job 9 (eval)\n");
  EXPECT_EQ(process_.daemon.requests[0].method, Method::kPost);
  EXPECT_EQ(sent_body(), Json::parse(R"({"jobs":[{"name":"prep"}],"replace":true})"));
}

TEST_F(Scheduling, PlanIdOnlyPrintsEachJobsId) {
  std::string plan = dir_.write("plan.json", R"({"jobs":[{"id":"prep","command":["true"]},)"
                                             R"({"id":"eval","command":["true"]}]})");
  script(
      {{"/v1/plans", json_answer(200, R"({"jobs":[{"name":"prep","id":3,"result":"existing"},)"
                                      R"({"name":"eval","id":9,"result":"created"}]})")}});
  EXPECT_EQ(run({"submit", plan, "--id-only"}), 0) << err();
  EXPECT_EQ(out(), "3\n9\n");
  expect_usage_error({"submit", plan, "--id-only", "--json"}, "--json and --id-only: choose one");
}

TEST_F(Scheduling, SendPlanJsonAndRefusal) {
  std::string answer = R"({"jobs":[{"name":"a","id":1,"result":"created"}]})";
  script({{"/v1/plans", json_answer(200, answer)},
          {"/v1/plans",
           json_answer(409, R"({"error":{"code":"conflict","message":"job prep changed"}})")}});
  Context ctx(process_.io, "/tmp/gpuq-fake-home", true);
  SubmitOptions options;
  options.json = true;
  EXPECT_EQ(send_plan(ctx, Json::object(), options), 0);
  EXPECT_EQ(out(), answer + "\n");
  EXPECT_FALSE(sent_body().contains("replace"));
  EXPECT_EQ(send_plan(ctx, Json::object(), options), kExitFailed);
  EXPECT_EQ(err(), "gpuq: job prep changed\n");
}

TEST_F(Scheduling, SubmitPlanPostsThePlan) {
  std::string plan = dir_.write("plan.json", R"({"jobs":[{"id":"prep","command":["true"]}]})");
  script(
      {{"/v1/plans", json_answer(200, R"({"jobs":[{"name":"prep","id":3,"result":"created"}]})")},
       {"/v1/plans",
        json_answer(200, R"({"jobs":[{"name":"prep","id":3,"result":"existing"}]})")}});
  EXPECT_EQ(run({"submit", plan, "--replace", "--env", "A=1"}), 0) << err();
  EXPECT_EQ(out(), "created job 3 (prep)\n");
  Json body = sent_body();
  EXPECT_EQ(body["replace"], true);
  ASSERT_TRUE(body["jobs"].is_array()) << body;
  ASSERT_EQ(body["jobs"].size(), 1u);
  EXPECT_EQ(body["jobs"][0]["name"], "prep");
  EXPECT_EQ(body["jobs"][0]["env"]["A"], "1");
  EXPECT_EQ(body["jobs"][0]["cwd"], "/tmp");

  process_.out.str("");
  EXPECT_EQ(run({"submit", "--json", plan}), 0) << err();
  EXPECT_EQ(out(), R"({"jobs":[{"name":"prep","id":3,"result":"existing"}]})"
                   "\n");
  EXPECT_FALSE(sent_body(1).contains("replace"));
}

TEST_F(Scheduling, BadPlanIsAUsageError) {
  std::string plan = dir_.write("plan.json", R"({"jobs":[{"id":"prep"}]})");
  expect_usage_error({"submit", plan}, "plan.json");
}

// --- hold, release, retry, move, drain ---------------------------------------------------

TEST_F(Scheduling, HoldReleaseRetryPostToTheJob) {
  script({{"/v1/jobs/7/hold", json_answer(200, job_json(7, "held"))},
          {"/v1/jobs/train%20a/hold",
           json_answer(409, R"({"error":{"code":"conflict","message":"job 8 is running"}})")},
          {"/v1/jobs/7/release", json_answer(200, job_json(7, "pending"))},
          {"/v1/jobs/9/retry", json_answer(200, job_json(9, "pending"))}});
  EXPECT_EQ(run({"hold", "7", "train a"}), kExitFailed);
  EXPECT_EQ(run({"release", "7"}), 0);
  EXPECT_EQ(run({"retry", "9"}), 0);
  EXPECT_EQ(out(), "held job 7\nreleased job 7\nrequeued job 9\n");
  EXPECT_EQ(err(), "gpuq: cannot hold job train a: job 8 is running\n");
  for (const auto& request : process_.daemon.requests) {
    EXPECT_EQ(request.method, Method::kPost);
    EXPECT_EQ(request.body, "{}");
  }
}

TEST_F(Scheduling, JobActionsStopWithoutADaemon) {
  process_.daemon.handler = nullptr;
  EXPECT_EQ(run({"retry", "1", "2"}), kExitNoDaemon);
  EXPECT_EQ(process_.daemon.requests.size(), 1u);
}

TEST_F(Scheduling, MoveSendsExactlyOnePosition) {
  struct Case {
    std::vector<std::string> flags;
    std::string body;
  };
  std::vector<Case> cases = {{{"--before", "3"}, R"({"before":"3"})"},
                             {{"--after", "prep"}, R"({"after":"prep"})"},
                             {{"--top"}, R"({"top":true})"},
                             {{"--bottom"}, R"({"bottom":true})"},
                             {{"--priority", "high"}, R"({"priority":10})"},
                             {{"--priority", "70"}, R"({"priority":70})"}};
  for (const auto& c : cases) {
    process_.daemon.requests.clear();
    script({{"/v1/jobs/7/move", json_answer(200, job_json(7, "pending"))}});
    std::vector<std::string> args = {"move", "7"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    EXPECT_EQ(run(args), 0) << err();
    ASSERT_EQ(process_.daemon.requests.size(), 1u);
    EXPECT_EQ(process_.daemon.requests[0].body, c.body);
  }
  EXPECT_EQ(out().substr(0, out().find('\n')), "moved job 7 (priority 50)");
}

TEST_F(Scheduling, MoveNeedsExactlyOnePosition) {
  expect_usage_error({"move", "7", "--top", "--bottom"}, "exactly one of --before");
  expect_usage_error({"move", "7", "--before", "3", "--after", "4"}, "(2 given)");
  expect_usage_error({"move", "7"}, "(0 given)");
  expect_usage_error({"move", "7", "--priority", "urgent"}, "--priority: bad priority");
  expect_usage_error({"move", "--top"}, "job");
}

TEST_F(Scheduling, MoveRefusedExitsOne) {
  script({{"/v1/jobs/7/move",
           json_answer(409, R"({"error":{"code":"conflict","message":"job 7 is running"}})")}});
  EXPECT_EQ(run({"move", "7", "--top"}), kExitFailed);
  EXPECT_EQ(err(), "gpuq: cannot move job 7: job 7 is running\n");
}

TEST_F(Scheduling, DrainAndUndrain) {
  script({{"/v1/drain", json_answer(200, R"({"draining":true})")},
          {"/v1/undrain", json_answer(200, R"({"draining":false})")}});
  EXPECT_EQ(run({"drain"}), 0);
  EXPECT_EQ(run({"undrain"}), 0);
  EXPECT_EQ(out(), "draining: nothing new starts; running jobs finish\nserving again\n");
  EXPECT_EQ(process_.daemon.requests[0].method, Method::kPost);
  process_.daemon.handler = nullptr;
  EXPECT_EQ(run({"drain"}), kExitNoDaemon);
}

// --- status ------------------------------------------------------------------------------

TEST_F(Scheduling, StatusShowsDrainingLanesAndEtas) {
  // now is 2026-11-29T10:55:36.123Z
  std::string jobs = job_json(1, "running") + "," +
                     job_json(2, "pending", R"(,"eta":"2026-11-29T11:07:36.123Z","reason":"r2")") +
                     "," + job_json(3, "pending", R"(,"eta":null,"reason":"r3")") + "," +
                     job_json(4, "pending", R"(,"eta":"2026-11-29T13:00:36.123Z","reason":"r4")") +
                     "," + job_json(5, "pending", R"(,"eta":"2026-11-29T10:00:00Z","reason":"r5")");
  std::string body =
      R"({"gpu_mode":"fake:1","draining":true,"resources":[],)"
      R"("lanes":[{"name":"net","capacity":1,"used":1,"excludes":["gpu"],"jobs":[1]},)"
      R"({"name":"cpu","capacity":4,"used":0,"excludes":[],"jobs":[]}],"jobs":[)" +
      jobs + "]}";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  std::string text = out();
  EXPECT_TRUE(text.starts_with("DRAINING: nothing new starts; running jobs finish")) << text;
  EXPECT_NE(text.find("NAME  CAPACITY  USED  EXCLUDES  JOBS\n"
                      "net   1         1     gpu       1\n"
                      "cpu   4         0     -         -\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ID  NAME  STATE    PRI  GPUS  TIME  ETA       REASON/COMMAND\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n1   -     running  50   1     -               train.sh\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("36s   in 12m    r2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("36s   -         r3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("36s   in 2h05m  r4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("36s   now       r5\n"), std::string::npos) << text;
}

TEST_F(Scheduling, StatusWithoutSchedulingFieldsLooksAsBefore) {
  std::string body = R"({"gpu_mode":"fake:1","draining":false,"resources":[],"lanes":[],"jobs":[)" +
                     job_json(1, "pending", R"(,"reason":"r")") + "]}";
  script({{"/v1/status?pending_limit=100&held_limit=100&arrays=collapse", json_answer(200, body)}});
  EXPECT_EQ(run({"status"}), 0);
  EXPECT_EQ(out().find("DRAINING"), std::string::npos) << out();
  EXPECT_EQ(out().find("CAPACITY"), std::string::npos) << out();
  EXPECT_EQ(out().find("ETA"), std::string::npos) << out();
}

// --- lint --------------------------------------------------------------------------------

TEST_F(Scheduling, LintNeedsFiles) { expect_usage_error({"lint"}, "file"); }

TEST_F(Scheduling, LintExitsOneOnErrorsOnly) {
  std::string empty = dir_.write("empty.sh", "");
  std::string good = dir_.write("good.sh", "#!/bin/bash\necho hi\n");
  process_.daemon.handler = nullptr;  // no daemon: lint still works
  EXPECT_EQ(run({"lint", good}), 0) << out() << err();
  EXPECT_EQ(run({"lint", good, empty}), kExitFailed) << out() << err();
  EXPECT_NE(out().find("empty.sh"), std::string::npos) << out();
  EXPECT_EQ(err(), "");
}

TEST_F(Scheduling, LintJsonListsDiagnostics) {
  std::string empty = dir_.write("empty.sh", "");
  script(
      {{"/v1/health",
        json_answer(
            200,
            R"({"ok":true,"gpus":[{"name":"gpu0"},{"name":"gpu1"}],"max_sweep_elements":100})")}});
  EXPECT_EQ(run({"lint", "--json", empty}), kExitFailed);
  Json list = Json::parse(out(), nullptr, false);
  ASSERT_TRUE(list.is_array()) << out();
  ASSERT_FALSE(list.empty());
  bool error_seen = false;
  for (const auto& d : list) {
    for (const char* key : {"file", "line", "severity", "message"}) {
      EXPECT_TRUE(d.contains(key)) << key << " in " << d;
    }
    error_seen = error_seen || d["severity"] == "error";
  }
  EXPECT_TRUE(error_seen) << out();
  EXPECT_EQ(process_.daemon.requests.size(), 1u);  // asked the daemon for its GPUs and limits
}

// A daemon that answers says how many GPUs it has and how many elements a sweep may have: lint
// judges a script against both.
TEST_F(Scheduling, LintChecksGpusAndSweepsAgainstTheDaemonThatAnswers) {
  std::string wide =
      dir_.write("wide.sh", "#!/bin/bash\n#gpuq gpus=4\n#gpuq array=0-149\necho {i}\n");
  script(
      {{"/v1/health",
        json_answer(
            200,
            R"({"ok":true,"gpus":[{"name":"gpu0"},{"name":"gpu1"}],"max_sweep_elements":100})")}});
  EXPECT_EQ(run({"lint", wide}), kExitFailed);
  EXPECT_NE(out().find("wide.sh:2: error: the script asks for 4 GPUs; this machine has 2"),
            std::string::npos)
      << out();
  EXPECT_NE(
      out().find("wide.sh:3: error: the array has 150 elements, more than the daemon's [sweeps] "
                 "max_elements (100): split it, or raise max_elements in its config.toml"),
      std::string::npos)
      << out();
}

// --- simulate ----------------------------------------------------------------------------

TEST_F(Scheduling, SimulateUsageErrors) {
  std::string plan = dir_.write("plan.json", R"({"jobs":[]})");
  expect_usage_error({"simulate", "--gpus", "2"}, "give a plan");
  expect_usage_error({"simulate", plan, "--trace", "t.csv", "--gpus", "2"}, "not both");
  expect_usage_error({"simulate", plan}, "--gpus");
  expect_usage_error({"simulate", plan, "--gpus", "-1"}, "--gpus must be 0 or more");
  expect_usage_error({"simulate", plan, "--gpus", "2", "--policy", "lifo"}, "bad --policy 'lifo'");
}

TEST_F(Scheduling, SimulatePlanNeedsNoDaemon) {
  std::string plan = dir_.write(
      "plan.json",
      R"({"jobs":[{"id":"prep","gpus":1,"command":["true"],"est_hours":1},)"
      R"({"id":"train","gpus":2,"command":["true"],"est_hours":2,"deps":["after:prep"]}]})");
  process_.daemon.handler = nullptr;
  EXPECT_EQ(run({"simulate", plan, "--gpus", "2"}), 0) << err();
  EXPECT_NE(out().find("train"), std::string::npos) << out();
  process_.out.str("");
  EXPECT_EQ(run({"simulate", plan, "--gpus", "2", "--json", "--policy", "fifo"}), 0) << err();
  Json result = Json::parse(out(), nullptr, false);
  ASSERT_TRUE(result.is_object()) << out();
  EXPECT_EQ(result["makespan_s"], 3 * 3600) << out();
  EXPECT_EQ(result["jobs"].size(), 2u) << out();
  EXPECT_TRUE(process_.daemon.requests.empty());
  EXPECT_EQ(run({"simulate", plan, "--gpus", "1"}), kExitFailed);  // train needs 2 GPUs
  EXPECT_NE(err().find("train"), std::string::npos) << err();
}

TEST_F(Scheduling, SimulateTraceLeavesOutJobs) {
  std::string trace = dir_.write("trace.csv", "id,submit_s,gpus,duration_s\na,0,1,60\nb,0,1,60\n");
  EXPECT_EQ(run({"simulate", "--trace", trace, "--gpus", "1", "--json"}), 0) << err();
  Json result = Json::parse(out(), nullptr, false);
  ASSERT_TRUE(result.is_object()) << out();
  EXPECT_EQ(result["makespan_s"], 120) << out();
  EXPECT_FALSE(result.contains("jobs"));
}

}  // namespace
}  // namespace gpuq::cli
