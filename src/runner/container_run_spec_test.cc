// SPDX-License-Identifier: Apache-2.0
// A run's spec made to run its container steps (runner/container_run_spec.h).
#include "runner/container_run_spec.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpuq::runner {
namespace {

using Argv = std::vector<std::string>;

const ContainerRuntime kPodman{RuntimeKind::kPodman, "/usr/bin/podman", {"--runtime", "runc"}};

RunContext a_context(const std::vector<const Resource*>& held) {
  RunContext context;
  context.job_id = 12;
  context.job_dir = "/s/jobs/12";
  context.run_dir = "/s/jobs/12/run-1";
  context.run_id = "12-1-ab";
  context.held = held;
  return context;
}

bool has(const Argv& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

TEST(StepImageTest, TheStepsOwnElseTheJobs) {
  JobSpec job;
  EXPECT_EQ(step_image(job, 0), "");
  EXPECT_FALSE(runs_in_containers(job));
  job.image = "busybox";
  EXPECT_EQ(step_image(job, 0), "busybox");
  EXPECT_TRUE(runs_in_containers(job));
  job.steps.resize(2);
  job.steps[1].image = "alpine";
  EXPECT_EQ(step_image(job, 0), "busybox");
  EXPECT_EQ(step_image(job, 1), "alpine");
  job.image = "";
  EXPECT_EQ(step_image(job, 0), "");
  EXPECT_TRUE(runs_in_containers(job));
}

TEST(ContainerUserArgTest, TheJobsElseTheSubmitters) {
  JobSpec job;
  EXPECT_EQ(container_user_arg(job, 1000, 100), "1000:100");
  job.container_user = "root";
  EXPECT_EQ(container_user_arg(job, 1000, 100), "root");
}

TEST(ContainerizeRunSpecTest, AJobWithoutStepsRunsItsCommandInTheImage) {
  Resource gpu3{"gpu3", 3, "", "", 0, 0};
  Resource lane{"stand-in", std::nullopt, "", "", 0, 0};
  JobSpec job;
  job.image = "busybox:1";
  RunSpec spec;
  spec.argv = {"bash", "/s/jobs/12/script", "x"};
  spec.env = {{"GPUQ_JOB_DIR", "/s/jobs/12"}, {"A", "1"}};
  RunContext context = a_context({&gpu3, &lane});
  EXPECT_EQ(held_gpu_indices(context), (std::vector<int>{3}));
  ASSERT_TRUE(containerize_run_spec(spec, job, context, kPodman, "1000:1000"));
  ContainerStep expected;
  expected.image = "busybox:1";
  expected.run_id = "12-1-ab";
  expected.job_dir = "/s/jobs/12";
  expected.run_dir = "/s/jobs/12/run-1";
  expected.env = spec.env;
  expected.user = "1000:1000";
  expected.gpus = {3};
  expected.argv = {"bash", "/s/jobs/12/script", "x"};
  EXPECT_EQ(spec.argv, container_run_argv(kPodman, expected));
  EXPECT_EQ(Argv(spec.argv.end() - 3, spec.argv.end()), (Argv{"bash", "/gpuq/job/script", "x"}));
  EXPECT_TRUE(has(spec.argv, "nvidia.com/gpu=3"));
  EXPECT_TRUE(has(spec.argv, "gpuq-12-1-ab-0"));
  EXPECT_EQ(spec.env.at("A"), "1");  // the runtime's own environment stays the run's
}

TEST(ContainerizeRunSpecTest, EachStepInItsImageOrOnTheHost) {
  JobSpec job;
  job.steps.resize(3);
  job.steps[0].image = "prep:1";
  job.steps[2].image = "train:2";
  RunSpec spec;
  spec.steps = {{"prep", {"sh", "-c", "prep"}, 0, ""},
                {"host", {"rsync", "a", "b"}, 0, ""},
                {"train", {"python", "t.py"}, 5000, "test -f done"}};
  ASSERT_TRUE(containerize_run_spec(spec, job, a_context({}), kPodman, "0:0"));
  EXPECT_EQ(spec.steps[0].argv[0], "/usr/bin/podman");
  EXPECT_TRUE(has(spec.steps[0].argv, "gpuq-12-1-ab-0"));
  EXPECT_TRUE(has(spec.steps[0].argv, "prep:1"));
  EXPECT_EQ(spec.steps[1].argv, (Argv{"rsync", "a", "b"}));
  EXPECT_TRUE(has(spec.steps[2].argv, "gpuq-12-1-ab-2"));
  EXPECT_TRUE(has(spec.steps[2].argv, "train:2"));
  EXPECT_EQ(spec.steps[2].argv.back(), "t.py");
  EXPECT_EQ(spec.steps[2].timeout_ms, 5000);
  EXPECT_EQ(spec.steps[2].done_if, "test -f done");  // a step's done_if runs on the host
  EXPECT_FALSE(has(spec.steps[2].argv, "--device"));
}

TEST(ContainerizeRunSpecTest, ARunForAnotherUserListsItsRootRuntimeStepsAndTheirEnvFile) {
  JobSpec job;
  job.steps.resize(3);
  job.steps[0].image = "prep:1";
  job.steps[2].image = "train:2";
  RunSpec spec;
  spec.steps = {{"prep", {"prep"}, 0, ""}, {"host", {"rsync"}, 0, ""}, {"train", {"train"}, 0, ""}};
  spec.env = {{"TOKEN", "s3cret"}, {"PATH", "/home/ann/bin"}};
  spec.run_as = os::UserIdentity{1001, 1001, {1001, 44}, "ann", "/home/ann", "/bin/sh"};
  ASSERT_TRUE(containerize_run_spec(spec, job, a_context({}), kPodman, "1001:1001"));
  ASSERT_TRUE(spec.root_runtime);
  EXPECT_EQ(spec.root_runtime->steps, (std::vector<int>{0, 2}));
  EXPECT_EQ(spec.root_runtime->env_file, (Argv{"TOKEN", "GPUQ_STEP_INDEX", "GPUQ_STEP_COUNT", "GPUQ_STEP_NAME"}));
  for (int i : {0, 2}) {
    const Argv& argv = spec.steps[static_cast<size_t>(i)].argv;
    EXPECT_TRUE(has(argv, "/dev/fd/3")) << i;
    EXPECT_TRUE(has(argv, "no-new-privileges")) << i;
    EXPECT_TRUE(has(argv, "44")) << i;  // --group-add
    EXPECT_FALSE(has(argv, "TOKEN")) << i;
  }
  // An admin's --container-user: the runtime is still root's, the confinement theirs to choose.
  RunSpec other = spec;
  other.steps = {{"prep", {"prep"}, 0, ""}, {"host", {"rsync"}, 0, ""}, {"train", {"train"}, 0, ""}};
  other.root_runtime.reset();
  job.container_user = "0:0";
  ASSERT_TRUE(containerize_run_spec(other, job, a_context({}), kPodman, "0:0"));
  ASSERT_TRUE(other.root_runtime);
  EXPECT_TRUE(has(other.steps[0].argv, "/dev/fd/3"));
  EXPECT_FALSE(has(other.steps[0].argv, "no-new-privileges"));
}

TEST(ContainerizeRunSpecTest, StepsThatDoNotMatchTheJobAreABug) {
  JobSpec job;
  job.image = "x";
  job.steps.resize(2);
  RunSpec spec;
  spec.steps.resize(1);
  auto status = containerize_run_spec(spec, job, a_context({}), kPodman, "");
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().code, Code::kInternal);
}

}  // namespace
}  // namespace gpuq::runner
