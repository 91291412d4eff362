// SPDX-License-Identifier: Apache-2.0
#include "runner/run_env.h"

#include <gtest/gtest.h>

namespace gpuq::runner {
namespace {

TEST(RunEnv, NamesExactlyTheHeldGpus) {
  JobSpec spec;
  spec.name = "train";
  spec.env = {{"PATH", "/usr/bin"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}, {"GPUQ_RUN_ID", "x"}};
  Resource a{"gpu1", 1, "", "", 0, 0}, b{"gpu3", 3, "", "", 0, 0};
  RunContext c;
  c.job_id = 7;
  c.run_number = 2;
  c.job_dir = "/h/jobs/7";
  c.run_dir = "/h/jobs/7/runs/2";
  c.run_id = "7-2-abc";
  c.held = {&a, &b};
  auto env = build_run_env(spec, c);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "1,3");
  EXPECT_EQ(env["TDPRM_GPU0"], "1");  // the first held GPU, as another queue's jobs read it
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["GPUQ_GPUS"], "1,3");
  EXPECT_EQ(env["GPUQ_JOB_ID"], "7");
  EXPECT_EQ(env["GPUQ_JOB_NAME"], "train");
  EXPECT_EQ(env["GPUQ_RUN_NUMBER"], "2");
  EXPECT_EQ(env["GPUQ_JOB_DIR"], "/h/jobs/7");
  EXPECT_EQ(env["GPUQ_RUN_DIR"], "/h/jobs/7/runs/2");
  EXPECT_EQ(env["GPUQ_RESUME"], "0");
  EXPECT_EQ(env["GPUQ_YIELD_FILE"], "/h/jobs/7/runs/2/yield");
  EXPECT_EQ(env["GPUQ_RUN_ID"], "7-2-abc");  // the submitted value never wins
  EXPECT_EQ(env["PATH"], "/usr/bin");
}

TEST(RunEnv, ARunWithoutAGpuHasNoFirstGpu) {
  JobSpec spec;
  spec.env = {{"TDPRM_GPU0", "2"}};  // a submitted value is not the run's GPU
  Resource net{"net", std::nullopt, "", "", 0, 0};
  RunContext c;
  auto env = build_run_env(spec, c);
  EXPECT_EQ(env.count("TDPRM_GPU0"), 0u);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  c.held = {&net};  // a lane is no GPU either
  env = build_run_env(spec, c);
  EXPECT_EQ(env.count("TDPRM_GPU0"), 0u);
}

TEST(RunEnv, AResumedFleetAttemptsFirstRunSeesResume) {
  JobSpec spec;
  spec.fleet_resume = true;
  spec.env = {{"GPUQ_RESUME", "0"}};
  RunContext c;
  c.run_number = 1;
  EXPECT_EQ(build_run_env(spec, c)["GPUQ_RESUME"], "1");
  c.run_number = 2;  // a local retry starts as any retry does
  EXPECT_EQ(build_run_env(spec, c)["GPUQ_RESUME"], "0");
  c.resume = true;   // after a yield
  EXPECT_EQ(build_run_env(spec, c)["GPUQ_RESUME"], "1");
}

TEST(RunEnv, PwdIsTheJobsWorkingDirectory) {
  JobSpec spec;
  spec.cwd = "/data/exp";
  spec.env = {{"PWD", "/home/me"}, {"OLDPWD", "/tmp"}};
  auto env = build_run_env(spec, RunContext{});
  EXPECT_EQ(env["PWD"], "/data/exp");
}

TEST(RunEnv, NoGpusHidesEveryGpu) {
  JobSpec spec;
  RunContext c;
  auto env = build_run_env(spec, c);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
}

TEST(RunEnv, StandInLaneHasNoIndex) {
  JobSpec spec;
  Resource lane{"gpu0", std::nullopt, "", "", 0, 0};
  RunContext c;
  c.held = {&lane};
  auto env = build_run_env(spec, c);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(env["GPUQ_GPUS"], "gpu0");
}

TEST(RunArgv, ScriptsWithAndWithoutShebang) {
  JobSpec spec;
  spec.script_text = "#!/usr/bin/env python3\nprint(1)\n";
  spec.script_args = {"--lr", "3"};
  EXPECT_EQ(run_argv(spec, "/j"), (std::vector<std::string>{"/j/script", "--lr", "3"}));
  spec.script_text = "echo hi\n";
  EXPECT_EQ(run_argv(spec, "/j"), (std::vector<std::string>{"bash", "/j/script", "--lr", "3"}));
  JobSpec command;
  command.argv = {"sleep", "1"};
  EXPECT_EQ(run_argv(command, "/j"), command.argv);
}

}  // namespace
}  // namespace gpuq::runner
