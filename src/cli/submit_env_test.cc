// SPDX-License-Identifier: Apache-2.0
// What of the submitter's environment `gpuq submit` sends (cli/submit_env.h), seen in the body
// of the request the scripted daemon receives.
#include "cli/submit_env.h"

#include <gtest/gtest.h>

#include <string>

#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;

constexpr const char* kToken = "hf_do_not_store_me";

class SubmitEnv : public testing::ScriptedCli {
 protected:
  SubmitEnv() {
    process_.io.environ = {"PATH=/opt/conda/bin:/usr/bin",
                           "HOME=/home/me",
                           "USER=me",
                           "LOGNAME=me",
                           "SHELL=/bin/bash",
                           "LANG=en_US.UTF-8",
                           "LANGUAGE=en_US",
                           "LC_ALL=C.UTF-8",
                           "LC_NUMERIC=de_DE.UTF-8",
                           "TZ=Europe/Berlin",
                           "TMPDIR=/scratch/tmp",
                           "TERM=xterm-256color",
                           std::string("HF_TOKEN=") + kToken,
                           "CONDA_PREFIX=/opt/conda/envs/train",
                           "CUDA_HOME=/usr/local/cuda",
                           "GPUQ_JOB_ID=12",
                           "GPUQ_HOME=/srv/gpuq"};
    for (std::string_view name : kSessionVariables) {
      process_.io.environ.push_back(std::string(name) + "=session-value");
    }
  }
  // Submits `args` to a daemon that accepts it, and returns the environment it was sent.
  Json submitted_env(std::vector<std::string> args) {
    script({{"/v1/jobs", json_answer(201, R"({"id":1,"name":null})")}});
    args.insert(args.begin(), "submit");
    EXPECT_EQ(run(args), kExitOk) << err();
    return sent_body()["env"];
  }
};

TEST_F(SubmitEnv, TheLoginSessionsVariablesAreLeftOut) {
  Json env = submitted_env({"--", "python", "train.py"});
  for (std::string_view name : kSessionVariables) {
    EXPECT_FALSE(env.contains(std::string(name))) << name << " was sent";
  }
  // Everything else the job may need is there, tokens included; gpuq's run variables are not.
  EXPECT_EQ(env["HF_TOKEN"], kToken);
  EXPECT_EQ(env["CONDA_PREFIX"], "/opt/conda/envs/train");
  EXPECT_EQ(env["CUDA_HOME"], "/usr/local/cuda");
  EXPECT_EQ(env["PATH"], "/opt/conda/bin:/usr/bin");
  EXPECT_EQ(env["TERM"], "xterm-256color");
  EXPECT_EQ(env["GPUQ_HOME"], "/srv/gpuq");
  EXPECT_FALSE(env.contains("GPUQ_JOB_ID"));
  EXPECT_EQ(env.size(), 16u) << env.dump();
}

TEST_F(SubmitEnv, AnExplicitEnvFlagBringsASessionVariableBack) {
  Json env = submitted_env({"--env", "DISPLAY=:1", "--", "python", "plot.py"});
  EXPECT_EQ(env["DISPLAY"], ":1");
  EXPECT_FALSE(env.contains("SSH_AUTH_SOCK"));
}

TEST_F(SubmitEnv, CleanEnvSendsOnlyTheMinimalSetAndTheEnvFlags) {
  Json env = submitted_env({"--clean-env", "--env", "WANDB_MODE=offline", "--", "python", "t.py"});
  EXPECT_EQ(env, Json::parse(R"({"HOME":"/home/me","LANG":"en_US.UTF-8","LANGUAGE":"en_US",
                                 "LC_ALL":"C.UTF-8","LC_NUMERIC":"de_DE.UTF-8","LOGNAME":"me",
                                 "PATH":"/opt/conda/bin:/usr/bin","SHELL":"/bin/bash",
                                 "TMPDIR":"/scratch/tmp","TZ":"Europe/Berlin","USER":"me",
                                 "WANDB_MODE":"offline"})"));
  EXPECT_EQ(process_.daemon.requests[0].body.find(kToken), std::string::npos);
}

TEST_F(SubmitEnv, CleanEnvAppliesToPlansToo) {
  testing::TempDir dir;
  std::string plan = dir.write("plan.json", R"({"jobs":[{"id":"prep","command":["true"]}]})");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"submit", "--clean-env", plan},
        std::vector<std::string>{"submit", plan, "--clean-env"}}) {
    SCOPED_TRACE(::testing::PrintToString(args));
    process_.daemon.requests.clear();
    script({{"/v1/plans",
             json_answer(200, R"({"jobs":[{"name":"prep","id":3,"result":"created"}]})")}});
    ASSERT_EQ(run(args), kExitOk) << err();
    const std::string& body = process_.daemon.requests[0].body;
    EXPECT_EQ(body.find(kToken), std::string::npos) << body;
    Json env = sent_body()["jobs"][0]["env"];
    EXPECT_EQ(env["HOME"], "/home/me");
    EXPECT_FALSE(env.contains("CONDA_PREFIX")) << env.dump();
  }
}

TEST_F(SubmitEnv, PlansLeaveOutTheSessionVariablesToo) {
  testing::TempDir dir;
  std::string plan = dir.write("plan.json", R"({"jobs":[{"id":"prep","command":["true"]}]})");
  script({{"/v1/plans",
           json_answer(200, R"({"jobs":[{"name":"prep","id":3,"result":"created"}]})")}});
  ASSERT_EQ(run({"submit", plan}), kExitOk) << err();
  Json env = sent_body()["jobs"][0]["env"];
  EXPECT_EQ(env["HF_TOKEN"], kToken);
  EXPECT_FALSE(env.contains("SSH_AUTH_SOCK")) << env.dump();
  EXPECT_FALSE(env.contains("SHLVL")) << env.dump();
}

TEST(SubmitEnvList, EveryNameIsListedOnce) {
  for (size_t i = 0; i < kSessionVariables.size(); ++i) {
    EXPECT_TRUE(is_session_variable(kSessionVariables[i]));
    for (size_t j = i + 1; j < kSessionVariables.size(); ++j) {
      EXPECT_NE(kSessionVariables[i], kSessionVariables[j]);
    }
    for (std::string_view clean : kCleanEnvVariables) EXPECT_NE(kSessionVariables[i], clean);
  }
  EXPECT_FALSE(is_session_variable("PATH"));
  EXPECT_FALSE(is_session_variable("SSH_AUTH"));
}

}  // namespace
}  // namespace gpuq::cli
