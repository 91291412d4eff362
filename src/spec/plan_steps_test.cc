// SPDX-License-Identifier: Apache-2.0
// Steps and containers in plan files (plan_steps.cc): a job's "steps", each step's script read from
// the plan's directory with its step headers, every refusal at its file:line. Plans are checked
// from text with scripts from a map (no files).
#include <gtest/gtest.h>

#include <map>

#include "spec/plan.h"
#include "spec/plan_text_fixture.h"

namespace gpuq::spec {
namespace {

using nlohmann::json;

using PlanSteps = PlanTextFixture;

TEST_F(PlanSteps, StepsAreSnapshottedWithTheirHeadersAndOwnFields) {
  scripts_["/p/prep.sh"] = "#!/bin/bash\n#gpuq name=prepare timeout=10m\nmake data\n";
  scripts_["/p/steps/train.sh"] = "#!/bin/bash\n#gpuq image=busybox\npython train.py \"$@\"\n";
  PlanCheck plan = check(R"({"jobs": [
    {"id": "pipe", "gpus": 2, "image": "ubuntu:24.04", "pull": "never", "est_hours": 1,
     "steps": [
       {"script": "prep.sh", "timeout": "20m"},
       {"script": "steps/train.sh", "args": ["--lr", "3e-4"], "name": "train"},
       {"argv": ["python", "eval.py"], "done_if": "test -s out/eval.json"},
       {"command": ["true"]}]}]})");
  ASSERT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  const json& request = plan.request["jobs"][0];
  EXPECT_FALSE(request.contains("script"));
  EXPECT_FALSE(request.contains("argv"));
  EXPECT_EQ(request["image"], "ubuntu:24.04");
  EXPECT_EQ(request["pull"], "never");
  const json& steps = request["steps"];
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0]["name"], "prepare");
  EXPECT_EQ(steps[0]["timeout"], "20m") << "the step's own field replaces its header's";
  EXPECT_EQ(steps[0]["script"]["name"], "/p/prep.sh");
  EXPECT_EQ(steps[0]["script"]["text"], scripts_["/p/prep.sh"]);
  EXPECT_EQ(steps[1]["script"]["args"], json::parse(R"(["--lr", "3e-4"])"));
  EXPECT_EQ(steps[1]["image"], "busybox");
  EXPECT_EQ(steps[1]["name"], "train");
  EXPECT_EQ(steps[2]["argv"], json::parse(R"(["python", "eval.py"])"));
  EXPECT_EQ(steps[3]["argv"], json::parse(R"(["true"])"));

  ASSERT_EQ(plan.specs.size(), 1u);
  const JobSpec& spec = plan.specs[0];
  ASSERT_EQ(spec.steps.size(), 4u);
  EXPECT_EQ(spec.steps[0].timeout_ms, 20 * 60 * 1000);
  EXPECT_EQ(spec.steps[2].done_if, "test -s out/eval.json");
  EXPECT_EQ(spec.steps[3].name, "true");
  EXPECT_EQ(spec.image, "ubuntu:24.04");
  EXPECT_EQ(spec.pull, PullPolicy::kNever);

  ASSERT_EQ(plan.jobs[0].steps.size(), 4u);
  EXPECT_EQ(plan.jobs[0].steps[1].script_path, "/p/steps/train.sh");
  EXPECT_EQ(plan.jobs[0].steps[1].line, 5);
  EXPECT_EQ(plan.jobs[0].steps[2].script_path, "");
}

TEST_F(PlanSteps, EveryBadStepIsAnErrorAtItsLine) {
  scripts_["/p/ok.sh"] = "#!/bin/bash\necho\n";
  scripts_["/p/gpus.sh"] = "#!/bin/bash\n#gpuq gpus=2\necho\n";
  struct Case {
    const char* plan;
    const char* finding;
  };
  for (const Case& c : {
           Case{R"([{"id": "a", "steps": []}])",
                "/p/plan.json:1: error: job 'a': \"steps\" must be a non-empty list of steps"},
           Case{R"([{"id": "a", "steps": {"argv": ["x"]}}])", "must be a non-empty list"},
           Case{R"([{"id": "a", "command": ["x"],
                     "steps": [{"argv": ["y"]}]}])",
                "/p/plan.json:1: error: job 'a': give \"steps\" or \"script\"/\"command\", not "
                "both"},
           Case{R"([{"id": "a", "steps": [
                     {"argv": ["y"]},
                     {"script": "nope.sh"}]}])",
                "/p/plan.json:3: error: job 'a': steps[1]: no such script /p/nope.sh (script "
                "paths are relative to the plan file's directory)"},
           Case{R"([{"id": "a", "steps": [
                     "echo"]}])",
                "/p/plan.json:2: error: job 'a': steps[0]: a step is an object"},
           Case{R"([{"id": "a", "steps": [{"argv": ["y"],
                     "gpus": 2}]}])",
                "/p/plan.json:2: error: job 'a': steps[0]: unknown key 'gpus'"},
           Case{R"([{"id": "a", "steps": [{"name": "x"}]}])",
                "/p/plan.json:1: error: job 'a': steps[0]: give one of \"script\""},
           Case{R"([{"id": "a", "steps": [{"script": "ok.sh", "argv": ["y"]}]}])",
                "steps[0]: give one of \"script\""},
           Case{R"([{"id": "a", "steps": [
                     {"argv": []}]}])",
                "/p/plan.json:2: error: job 'a': steps[0]: \"argv\" must be a non-empty list"},
           Case{R"([{"id": "a", "steps": [{"argv": ["y"],
                     "args": ["z"]}]}])",
                "/p/plan.json:2: error: job 'a': steps[0]: \"args\" go with \"script\""},
           Case{R"([{"id": "a", "steps": [
                     {"argv": ["y"], "image": "Busybox"}]}])",
                "/p/plan.json:2: error: job 'a': steps[0]: field 'image': 'Busybox' is not an "
                "image reference"},
           Case{R"([{"id": "a", "steps": [
                     {"argv": ["y"], "timeout": "soon"}]}])",
                "/p/plan.json:2: error: job 'a': steps[0]: field 'timeout'"},
           Case{R"([{"id": "a", "steps": [{"script": "gpus.sh"}]}])",
                "/p/gpus.sh:2: error: gpus= sets the whole job, not one step"},
           Case{R"([{"id": "a", "image": "Busybox", "steps": [{"argv": ["y"]}]}])",
                "/p/plan.json:1: error: job 'a': field 'image': 'Busybox' is not an image"},
           Case{R"([{"id": "a", "pull": "always", "steps": [{"argv": ["y"]}]}])",
                "job 'a': field 'pull' applies only to container jobs"},
       }) {
    EXPECT_NE(only_finding(c.plan).find(c.finding), std::string::npos)
        << c.plan << "\n-> " << only_finding(c.plan);
  }
}

TEST_F(PlanSteps, AStepScriptUsedAsAJobsScriptIsReadInBothRoles) {
  scripts_["/p/both.sh"] = "#!/bin/bash\n#gpuq gpus=1\necho\n";
  auto all = findings(R"([{"id": "job", "script": "both.sh"},
                          {"id": "steps", "steps": [{"script": "both.sh"}]}])");
  ASSERT_EQ(all.size(), 1u) << ::testing::PrintToString(all);
  EXPECT_EQ(all[0].find("/p/both.sh:2: error: gpus= sets the whole job"), 0u) << all[0];
}

TEST_F(PlanSteps, AJobScriptsImageHeaderIsTheJobs) {
  scripts_["/p/job.sh"] = "#!/bin/bash\n#gpuq image=busybox pull=always\necho\n";
  PlanCheck plan = check(R"([{"id": "a", "script": "job.sh", "container_user": "0:0"}])");
  ASSERT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  EXPECT_EQ(plan.specs[0].image, "busybox");
  EXPECT_EQ(plan.specs[0].pull, PullPolicy::kAlways);
  EXPECT_EQ(plan.specs[0].container_user, "0:0");
}

}  // namespace
}  // namespace gpuq::spec
