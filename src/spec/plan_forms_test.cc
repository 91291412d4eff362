// SPDX-License-Identifier: Apache-2.0
// Plans as the queues people move from write them (plan_simulation.cc, plan_paths.h): one GPU
// when an entry says nothing of GPUs, the simulator's fields kept apart from the request, `~`
// and `$NAME` in paths and a script with its arguments. Plans are checked from text with
// scripts from a map (no files).
#include <gtest/gtest.h>

#include <map>

#include "spec/plan.h"
#include "spec/plan_text_fixture.h"
#include "spec/plan_paths.h"

namespace gpuq::spec {
namespace {

using nlohmann::json;

class PlanForms : public PlanTextFixture {
 protected:
  void SetUp() override {
    scripts_ = {{"/p/train.sh", "#!/bin/bash\necho hi\n"}};
    shell_ = {{"HOME", "/home/ann"}, {"PROJ", "/p"}, {"T", "/tmp"}};
  }
};

TEST_F(PlanForms, AnEntryThatSaysNothingOfGpusAsksForOne) {
  scripts_["/p/cpu.sh"] = "#!/bin/bash\n#gpuq gpus=0\necho prep\n";
  scripts_["/p/fetch.sh"] = "#!/bin/bash\n# LANE=net\ncurl x\n";
  PlanCheck plan = check(R"({"jobs": [
    {"id": "train", "script": "train.sh", "est_hours": 1},
    {"id": "zero", "script": "train.sh", "gpus": 0},
    {"id": "two", "command": ["python", "t.py"], "gpus": 2},
    {"id": "header", "script": "cpu.sh"},
    {"id": "fetch", "script": "fetch.sh"},
    {"id": "lane", "command": ["curl", "x"], "lane": "net"},
    {"id": "gpu-lane", "command": ["python", "t.py"], "lane": "gpu"}
  ]})");
  ASSERT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  std::map<std::string, int> gpus;
  for (const JobSpec& spec : plan.specs) gpus[spec.name] = spec.gpus;
  EXPECT_EQ(gpus, (std::map<std::string, int>{{"train", 1},
                                              {"zero", 0},
                                              {"two", 2},
                                              {"header", 0},
                                              {"fetch", 0},
                                              {"lane", 0},
                                              {"gpu-lane", 1}}));
  EXPECT_EQ(plan.request["jobs"][0]["gpus"], 1);  // sent, so the daemon runs what was checked
}

TEST_F(PlanForms, TheSimulatorsFieldsAreKeptForItAndNotSent) {
  PlanCheck plan = check(R"({"jobs": [
    {"id": "train", "script": "train.sh", "est_hours": 4, "first_look_frac": 0.25},
    {"id": "eval", "script": "train.sh", "est_hours": 1, "deps": ["file:ckpt/step-1000.pt"],
     "produced_by": "train", "produced_at_frac": 0.5},
    {"id": "plain", "script": "train.sh", "est_hours": 1}
  ]})");
  ASSERT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  ASSERT_EQ(plan.simulation.size(), 3u);
  EXPECT_EQ(plan.simulation[0].first_look_frac, 0.25);
  EXPECT_EQ(plan.simulation[0].produced_by, "");
  EXPECT_EQ(plan.simulation[1].produced_by, "train");
  EXPECT_EQ(plan.simulation[1].produced_at_frac, 0.5);
  EXPECT_FALSE(plan.simulation[1].first_look_frac);
  EXPECT_EQ(plan.simulation[2].produced_at_frac, 1.0);
  for (const json& job : plan.request["jobs"]) {
    for (const char* key : {"produced_by", "produced_at_frac", "first_look_frac"})
      EXPECT_FALSE(job.contains(key)) << key << " sent in " << job["name"];
  }
  EXPECT_EQ(plan.request["jobs"][1]["wait_file"], json({"ckpt/step-1000.pt"}));
}

TEST_F(PlanForms, TheSimulatorsFieldsAreCheckedWhereTheyAreWritten) {
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "eval", "script": "train.sh", "deps": ["file:x"],
     "produced_by": "trian"}]})"),
            "/p/plan.json:3: error: job 'eval': \"produced_by\" names 'trian', which is not a job "
            "of this plan; name the job of the plan that writes its input");
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "eval", "script": "train.sh", "deps": ["file:x"], "produced_by": "eval"}]})"),
            "/p/plan.json:2: error: job 'eval': \"produced_by\" names the job itself; name the "
            "job that writes its input");
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "train", "script": "train.sh"},
    {"id": "eval", "script": "train.sh", "deps": ["file:x"], "produced_by": "train",
     "produced_at_frac": 1.5}]})"),
            "/p/plan.json:4: error: job 'eval': \"produced_at_frac\" must be a fraction of a run, "
            "from 0 to 1 (0.25: a quarter of the way in)");
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "eval", "script": "train.sh", "first_look_frac": "half"}]})"),
            "/p/plan.json:2: error: job 'eval': \"first_look_frac\" must be a fraction of a run, "
            "from 0 to 1 (0.25: a quarter of the way in)");
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "eval", "script": "train.sh",
     "produced_at_frac": 0.5}]})"),
            "/p/plan.json:3: error: job 'eval': \"produced_at_frac\" says when another job writes "
            "this one's input; name that job in \"produced_by\"");
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "shards", "command": ["e", "{i}"], "array": "0-3"},
    {"id": "eval", "script": "train.sh", "deps": ["file:x"], "produced_by": "shards"}]})"),
            "/p/plan.json:3: error: job 'eval': \"produced_by\" names the job array 'shards'; "
            "name a single job (a simulation cannot tell which element writes the input)");
}

TEST_F(PlanForms, AProducedByWithoutAWaitTheDaemonSeesIsAWarning) {
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "train", "script": "train.sh"},
    {"id": "eval", "script": "train.sh", "produced_by": "train"}]})"),
            "/p/plan.json:3: warning: job 'eval': \"produced_by\" tells `gpuq simulate` when "
            "'train' writes its input, but the daemon starts it as soon as its dependencies "
            "allow and it has no \"file:\" dep or requires test; add the file it reads to "
            "\"deps\" as \"file:PATH\"");
  // Waiting for the producer's end is a wait the daemon sees too.
  EXPECT_TRUE(findings(R"({"jobs": [
    {"id": "train", "script": "train.sh"},
    {"id": "eval", "script": "train.sh", "deps": ["train"], "produced_by": "train"}]})")
                  .empty());
}

TEST_F(PlanForms, AProducedByCycleIsADependencyCycle) {
  auto all = findings(R"({"jobs": [
    {"id": "a", "script": "train.sh", "deps": ["file:x"], "produced_by": "b"},
    {"id": "b", "script": "train.sh", "deps": ["a"]}]})");
  ASSERT_EQ(all.size(), 1u) << ::testing::PrintToString(all);
  EXPECT_NE(all[0].find("error: dependency cycle: a -> b -> a"), std::string::npos) << all[0];
}

TEST_F(PlanForms, AScriptMayCarryItsArgumentsAndUseHomeAndVariables) {
  scripts_["/home/ann/exp/train.sh"] = "#!/bin/bash\necho \"$@\"\n";
  scripts_["/p/my job.sh"] = "#!/bin/bash\necho spaced\n";
  PlanCheck plan = check(R"({"jobs": [
    {"id": "a", "script": "~/exp/train.sh --lr 3e-4 --out \"$PROJ/out dir\"", "args": ["--x"]},
    {"id": "b", "script": "${PROJ}/train.sh", "cwd": "$T"},
    {"id": "c", "script": "my job.sh", "deps": ["file:~/data/ready", "file:$PROJ/x"]}
  ]})");
  ASSERT_TRUE(plan.diagnostics.empty()) << plan.diagnostics.front().text();
  const json& a = plan.request["jobs"][0]["script"];
  EXPECT_EQ(a["name"], "/home/ann/exp/train.sh");
  EXPECT_EQ(a["args"], json({"--lr", "3e-4", "--out", "/p/out dir", "--x"}));
  EXPECT_EQ(plan.request["jobs"][1]["script"]["name"], "/p/train.sh");
  EXPECT_EQ(plan.request["jobs"][1]["cwd"], "/tmp");
  EXPECT_EQ(plan.request["jobs"][2]["script"]["name"], "/p/my job.sh");  // a file: kept whole
  EXPECT_EQ(plan.request["jobs"][2]["script"]["args"], json::array());
  EXPECT_EQ(plan.request["jobs"][2]["wait_file"], json({"/home/ann/data/ready", "/p/x"}));
}

TEST_F(PlanForms, AVariableThatIsNotSetIsAnErrorAtItsLine) {
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "a",
     "script": "$NOPE/train.sh"}]})"),
            "/p/plan.json:3: error: job 'a': \"script\" $NOPE is not set in the environment gpuq "
            "was run from; set it, or write the path in full");
  EXPECT_EQ(only_finding(R"({"jobs": [
    {"id": "a", "script": "train.sh",
     "deps": ["file:~bob/x"]}]})"),
            "/p/plan.json:3: error: dep 'file:~bob/x': '~bob/x': only ~ (your home) is expanded, "
            "not ~user; write that user's home in full");
}

TEST(PlanPaths, HomeAndVariablesAreExpandedAndNothingElse) {
  std::map<std::string, std::string> env = {{"HOME", "/home/ann"}, {"A", "x"}, {"A_1", "y"}};
  EXPECT_EQ(*expand_plan_path("~", env), "/home/ann");
  EXPECT_EQ(*expand_plan_path("~/d/$A/${A_1}.sh", env), "/home/ann/d/x/y.sh");
  EXPECT_EQ(*expand_plan_path("a~/b$/c$1*", env), "a~/b$/c$1*");  // kept as written
  EXPECT_EQ(*expand_plan_path("$A_1$A", env), "yx");
  EXPECT_EQ(expand_plan_path("${A", env).error().message,
            "'${' without its '}' in '${A'; write ${NAME}");
  EXPECT_EQ(expand_plan_path("${A:-z}", env).error().message,
            "'${A:-z}' in '${A:-z}': only ${NAME} is expanded in a plan's paths (no defaults or "
            "other shell forms); write the path in full");
  EXPECT_EQ(expand_plan_path("~/x", {}).error().message,
            "'~/x' starts with ~ and HOME is not set; set HOME or write the path in full");
}

TEST(PlanPaths, AScriptFieldIsAPathOrAPathAndItsArguments) {
  std::map<std::string, std::string> env = {{"HOME", "/h"}};
  auto none = [](const std::string&) { return false; };
  auto words = read_script_words("run.sh 'a b' ~/c", env, none);
  ASSERT_TRUE(words);
  EXPECT_EQ(words->path, "run.sh");
  EXPECT_EQ(words->args, (std::vector<std::string>{"a b", "/h/c"}));
  auto spaced = read_script_words("my run.sh", env, [](const std::string& p) { return p == "my run.sh"; });
  ASSERT_TRUE(spaced);
  EXPECT_EQ(spaced->path, "my run.sh");
  EXPECT_TRUE(spaced->args.empty());
  EXPECT_EQ(read_script_words("run.sh \"a", env, none).error().message.substr(0, 9), "'run.sh \"");
}

}  // namespace
}  // namespace gpuq::spec
