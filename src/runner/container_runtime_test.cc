// SPDX-License-Identifier: Apache-2.0
// The command lines gpuq gives docker and podman (runner/container_runtime.h), word for word,
// and how the runtime is found on a PATH the test makes.
#include "runner/container_runtime.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace gpuq::runner {
namespace {

using Argv = std::vector<std::string>;

const ContainerRuntime kDocker{RuntimeKind::kDocker, "/usr/bin/docker", {}};
const ContainerRuntime kPodman{RuntimeKind::kPodman, "/usr/bin/podman", {}};

ContainerStep a_step() {
  ContainerStep step;
  step.image = "pytorch/pytorch:2.3";
  step.run_id = "12-1-00ff";
  step.step_index = 0;
  step.job_dir = "/var/lib/gpuq/jobs/12";
  step.run_dir = "/var/lib/gpuq/jobs/12/run-1";
  step.argv = {"python", "train.py"};
  return step;
}

// The words of `argv` after gpuq's fixed part (binary, run, --rm, name, label, mounts, workdir).
Argv after_workdir(const Argv& argv) {
  auto at = std::find(argv.begin(), argv.end(), "--workdir");
  return at == argv.end() ? Argv{} : Argv(at + 2, argv.end());
}

TEST(ContainerRunArgvTest, DockerWithoutGpusUserOrEnv) {
  EXPECT_EQ(container_run_argv(kDocker, a_step()),
            (Argv{"/usr/bin/docker",
                  "run",
                  "--rm",
                  "--pull=never",
                  "--name",
                  "gpuq-12-1-00ff-0",
                  "--label",
                  "gpuq.run=12-1-00ff",
                  "--mount",
                  "type=bind,source=/var/lib/gpuq/jobs/12,target=/gpuq/job",
                  "--mount",
                  "type=bind,source=/var/lib/gpuq/jobs/12/run-1,target=/gpuq/run",
                  "--workdir",
                  "/gpuq/job",
                  "--env",
                  "GPUQ_STEP_INDEX",
                  "--env",
                  "GPUQ_STEP_COUNT",
                  "--env",
                  "GPUQ_STEP_NAME",
                  "--env",
                  "CUDA_VISIBLE_DEVICES=",
                  "--env",
                  "NVIDIA_VISIBLE_DEVICES=void",
                  "pytorch/pytorch:2.3",
                  "python",
                  "train.py"}));
}

TEST(ContainerRunArgvTest, PodmanHasTheSameShapeWithoutGpus) {
  Argv docker = container_run_argv(kDocker, a_step());
  Argv podman = container_run_argv(kPodman, a_step());
  ASSERT_EQ(podman.size(), docker.size());
  EXPECT_EQ(podman[0], "/usr/bin/podman");
  EXPECT_TRUE(std::equal(docker.begin() + 1, docker.end(), podman.begin() + 1));
}

TEST(ContainerRunArgvTest, NameAndLabelCarryTheRunAndStep) {
  ContainerStep step = a_step();
  step.step_index = 3;
  Argv argv = container_run_argv(kPodman, step);
  EXPECT_EQ(argv[3], "--pull=never") << "a run never pulls: the daemon did, before its GPUs";
  EXPECT_EQ(argv[4], "--name");
  EXPECT_EQ(argv[5], "gpuq-12-1-00ff-3");
  EXPECT_EQ(argv[6], "--label");
  EXPECT_EQ(argv[7], "gpuq.run=12-1-00ff");
  EXPECT_EQ(container_name("7-2-abc", 0), "gpuq-7-2-abc-0");
  EXPECT_EQ(container_label("7-2-abc"), "gpuq.run=7-2-abc");
}

TEST(ContainerRunArgvTest, DockerGpusAreOneQuotedDeviceList) {
  ContainerStep step = a_step();
  step.gpus = {0, 3};
  Argv tail = after_workdir(container_run_argv(kDocker, step));
  EXPECT_EQ(tail, (Argv{"--gpus", "\"device=0,3\"", "--env", "GPUQ_STEP_INDEX", "--env",
                        "GPUQ_STEP_COUNT", "--env", "GPUQ_STEP_NAME", "--env",
                        "CUDA_VISIBLE_DEVICES=0,1", "--env", "TDPRM_GPU0=0", "pytorch/pytorch:2.3",
                        "python", "train.py"}));
  step.gpus = {5};
  tail = after_workdir(container_run_argv(kDocker, step));
  EXPECT_EQ(Argv(tail.begin(), tail.begin() + 2), (Argv{"--gpus", "\"device=5\""}));
  EXPECT_NE(std::find(tail.begin(), tail.end(), "CUDA_VISIBLE_DEVICES=0"), tail.end());
}

TEST(ContainerRunArgvTest, PodmanGpusAreOneCdiDeviceEach) {
  ContainerStep step = a_step();
  step.gpus = {2, 6};
  Argv tail = after_workdir(container_run_argv(kPodman, step));
  EXPECT_EQ(tail,
            (Argv{"--device", "nvidia.com/gpu=2", "--device", "nvidia.com/gpu=6", "--env",
                  "GPUQ_STEP_INDEX", "--env", "GPUQ_STEP_COUNT", "--env", "GPUQ_STEP_NAME", "--env",
                  "CUDA_VISIBLE_DEVICES=0,1", "--env", "TDPRM_GPU0=0", "pytorch/pytorch:2.3",
                  "python", "train.py"}));
}

TEST(ContainerRunArgvTest, NoGpuNoDeviceFlag) {
  for (const ContainerRuntime& runtime : {kDocker, kPodman}) {
    Argv argv = container_run_argv(runtime, a_step());
    EXPECT_EQ(std::find(argv.begin(), argv.end(), "--gpus"), argv.end());
    EXPECT_EQ(std::find(argv.begin(), argv.end(), "--device"), argv.end());
  }
}

TEST(ContainerRunArgvTest, ExtraArgsComeRightAfterRunSoGpuqsOwnFlagsWin) {
  ContainerRuntime podman = kPodman;
  podman.extra_args = {"--runtime", "runc", "--ulimit", "nofile=1024:1024"};
  Argv argv = container_run_argv(podman, a_step());
  EXPECT_EQ(Argv(argv.begin(), argv.begin() + 7),
            (Argv{"/usr/bin/podman", "run", "--runtime", "runc", "--ulimit", "nofile=1024:1024",
                  "--rm"}));
  EXPECT_EQ(argv.back(), "train.py");
}

TEST(ContainerRunArgvTest, UserWhenGiven) {
  ContainerStep step = a_step();
  step.user = "1000:1000";
  Argv tail = after_workdir(container_run_argv(kDocker, step));
  EXPECT_EQ(Argv(tail.begin(), tail.begin() + 2), (Argv{"--user", "1000:1000"}));
  step.user = "";
  Argv argv = container_run_argv(kDocker, step);
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "--user"), argv.end());
}

TEST(ContainerRunArgvTest, VariablesPassByNameButPathsAndDevicesByValue) {
  ContainerStep step = a_step();
  step.gpus = {4};
  step.env = {{"HF_TOKEN", "secret"},
              {"GPUQ_JOB_ID", "12"},
              {"GPUQ_JOB_DIR", "/var/lib/gpuq/jobs/12"},
              {"GPUQ_RUN_DIR", "/var/lib/gpuq/jobs/12/run-1"},
              {"GPUQ_YIELD_FILE", "/var/lib/gpuq/jobs/12/run-1/yield"},
              {"GPUQ_RUN_ID", "12-1-00ff"},
              {"GPUQ_RESUME", "0"},
              {"GPUQ_GPUS", "4"},
              {"CUDA_VISIBLE_DEVICES", "4"},
              {"TDPRM_GPU0", "4"},
              {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"},
              {"NVIDIA_VISIBLE_DEVICES", "all"},
              {"PATH", "/opt/conda/bin:/usr/bin"},
              {"HOME", "/home/ann"},
              {"PWD", "/home/ann/proj"},
              {"LD_LIBRARY_PATH", "/usr/local/cuda/lib64"}};
  Argv tail = after_workdir(container_run_argv(kDocker, step));
  EXPECT_EQ(tail, (Argv{"--gpus",
                        "\"device=4\"",
                        "--env",
                        "CUDA_DEVICE_ORDER",
                        "--env",
                        "GPUQ_GPUS",
                        "--env",
                        "GPUQ_JOB_DIR=/gpuq/job",
                        "--env",
                        "GPUQ_JOB_ID",
                        "--env",
                        "GPUQ_RESUME",
                        "--env",
                        "GPUQ_RUN_DIR=/gpuq/run",
                        "--env",
                        "GPUQ_RUN_ID",
                        "--env",
                        "GPUQ_YIELD_FILE=/gpuq/run/yield",
                        "--env",
                        "HF_TOKEN",
                        "--env",
                        "GPUQ_STEP_INDEX",
                        "--env",
                        "GPUQ_STEP_COUNT",
                        "--env",
                        "GPUQ_STEP_NAME",
                        "--env",
                        "CUDA_VISIBLE_DEVICES=0",
                        "--env",
                        "TDPRM_GPU0=0",
                        "pytorch/pytorch:2.3",
                        "python",
                        "train.py"}));
  for (const std::string& word : container_run_argv(kDocker, step)) {
    EXPECT_EQ(word.find("secret"), std::string::npos)
        << "a job's value in the command line: " << word;
  }
}

TEST(ContainerRunArgvTest, StepVariablesTheEnvironmentHasArePassedOnce) {
  ContainerStep step = a_step();
  step.env = {{"GPUQ_STEP_INDEX", "1"}};
  Argv argv = container_run_argv(kPodman, step);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "GPUQ_STEP_INDEX"), 1);
}

// A root daemon's run for another user: the variables passed by name go in the env file the
// shim gives on fd 3, the user's groups are added, and the container can gain no capability.
TEST(ContainerRunArgvTest, ForAnotherUserVariablesComeFromTheEnvFileAndNothingCanBeGained) {
  ContainerStep step = a_step();
  step.env = {{"TOKEN", "s3cret"}, {"GPUQ_RUN_DIR", "/var/lib/gpuq/jobs/12/run-1"}, {"LD_PRELOAD", "/x.so"}};
  step.user = "1001:1001";
  step.groups = {1001, 27};
  step.env_file = true;
  step.confined = true;
  EXPECT_EQ(after_workdir(container_run_argv(kPodman, step)),
            (Argv{"--user", "1001:1001", "--group-add", "1001", "--group-add", "27", "--cap-drop", "all",
                  "--security-opt", "no-new-privileges", "--env", "GPUQ_RUN_DIR=/gpuq/run", "--env-file",
                  "/dev/fd/3", "--env", "CUDA_VISIBLE_DEVICES=", "--env", "NVIDIA_VISIBLE_DEVICES=void",
                  "pytorch/pytorch:2.3", "python", "train.py"}));
  EXPECT_EQ(variables_by_name(step), (Argv{"TOKEN", "GPUQ_STEP_INDEX", "GPUQ_STEP_COUNT", "GPUQ_STEP_NAME"}));
  // An admin's --container-user: the env file still, no confinement chosen for it.
  step.confined = false;
  step.groups.clear();
  Argv argv = container_run_argv(kDocker, step);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--cap-drop"), 0);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--env-file"), 1);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "TOKEN"), 0);
}

TEST(ContainerRunArgvTest, HostPathsInTheCommandAreRewritten) {
  ContainerStep step = a_step();
  step.argv = {"bash",
               "/var/lib/gpuq/jobs/12/step-1",
               "--out",
               "/var/lib/gpuq/jobs/12/run-1/out",
               "/var/lib/gpuq/jobs/123/x",
               "/data/x"};
  Argv argv = container_run_argv(kPodman, step);
  EXPECT_EQ(Argv(argv.end() - 6, argv.end()),
            (Argv{"bash", "/gpuq/job/step-1", "--out", "/gpuq/run/out", "/var/lib/gpuq/jobs/123/x",
                  "/data/x"}));
}

TEST(ContainerPathTest, RunDirectoryFirstThenJobDirectory) {
  const std::string job = "/s/jobs/4", run = "/s/jobs/4/run-2";
  EXPECT_EQ(container_path("/s/jobs/4", job, run), "/gpuq/job");
  EXPECT_EQ(container_path("/s/jobs/4/script", job, run), "/gpuq/job/script");
  EXPECT_EQ(container_path("/s/jobs/4/run-2", job, run), "/gpuq/run");
  EXPECT_EQ(container_path("/s/jobs/4/run-2/yield", job, run), "/gpuq/run/yield");
  EXPECT_EQ(container_path("/s/jobs/4/run-20/x", job, run), "/gpuq/job/run-20/x");
  EXPECT_EQ(container_path("/s/jobs/45", job, run), "/s/jobs/45");
  EXPECT_EQ(container_path("relative", job, run), "relative");
}

TEST(ContainerCommandArgvTest, StopKillPsRm) {
  EXPECT_EQ(container_stop_argv(kDocker, "gpuq-1-1-a-0", 10),
            (Argv{"/usr/bin/docker", "stop", "-t", "10", "gpuq-1-1-a-0"}));
  EXPECT_EQ(container_stop_argv(kPodman, "gpuq-1-1-a-2", 0),
            (Argv{"/usr/bin/podman", "stop", "-t", "0", "gpuq-1-1-a-2"}));
  EXPECT_EQ(container_stop_argv(kPodman, "n", -5)[3], "0");
  EXPECT_EQ(container_kill_argv(kDocker, "gpuq-1-1-a-0"),
            (Argv{"/usr/bin/docker", "kill", "gpuq-1-1-a-0"}));
  EXPECT_EQ(container_kill_argv(kPodman, "gpuq-1-1-a-0"),
            (Argv{"/usr/bin/podman", "kill", "gpuq-1-1-a-0"}));
  for (const ContainerRuntime& runtime : {kDocker, kPodman}) {
    EXPECT_EQ(container_ps_argv(runtime, "1-1-a"),
              (Argv{runtime.binary, "ps", "-a", "--no-trunc", "--filter", "label=gpuq.run=1-1-a",
                    "--format", "{{.ID}} {{.Names}}"}));
  }
  EXPECT_EQ(container_rm_argv(kDocker, {"abc", "def"}),
            (Argv{"/usr/bin/docker", "rm", "-f", "abc", "def"}));
  EXPECT_EQ(container_rm_argv(kPodman, {"abc"}),
            (Argv{"/usr/bin/podman", "rm", "-f", "-t", "0", "abc"}));
}

TEST(ContainerCommandArgvTest, ExtraArgsAreForRunOnly) {
  ContainerRuntime podman = kPodman;
  podman.extra_args = {"--runtime", "runc"};
  EXPECT_EQ(container_kill_argv(podman, "n"), (Argv{"/usr/bin/podman", "kill", "n"}));
  EXPECT_EQ(image_pull_argv(podman, "busybox"), (Argv{"/usr/bin/podman", "pull", "busybox"}));
}

TEST(ContainerCommandArgvTest, ImagePresenceAndPull) {
  EXPECT_EQ(image_present_argv(kDocker, "nvcr.io/nvidia/pytorch:24.01-py3"),
            (Argv{"/usr/bin/docker", "image", "inspect", "--format", "{{.Id}}",
                  "nvcr.io/nvidia/pytorch:24.01-py3"}));
  EXPECT_EQ(image_present_argv(kPodman, "busybox:1"),
            (Argv{"/usr/bin/podman", "image", "exists", "busybox:1"}));
  EXPECT_EQ(image_pull_argv(kDocker, "busybox:1"), (Argv{"/usr/bin/docker", "pull", "busybox:1"}));
}

// A PATH of the test's own directories, holding stand-ins named docker and podman.
class FindRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gpuq-find-runtime-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    for (const char* sub : {"a", "b", "empty"}) std::filesystem::create_directories(dir_ / sub);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string put(const std::string& sub, const std::string& name, mode_t mode = 0755) {
    std::filesystem::path file = dir_ / sub / name;
    std::ofstream(file) << "#!/bin/sh\nexit 0\n";
    ::chmod(file.c_str(), mode);
    return file.string();
  }
  std::string path(const std::string& sub) const { return (dir_ / sub).string(); }

  std::filesystem::path dir_;
};

TEST_F(FindRuntimeTest, DockerFirstWhenBothAreThere) {
  std::string podman = put("a", "podman");
  std::string docker = put("b", "docker");
  auto found = find_container_runtime("", {"--x"}, path("a") + ":" + path("b"));
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->kind, RuntimeKind::kDocker);
  EXPECT_EQ(found->binary, docker);
  EXPECT_EQ(found->extra_args, (Argv{"--x"}));
  auto podman_only = find_container_runtime("", {}, path("a"));
  ASSERT_TRUE(podman_only) << podman_only.error().message;
  EXPECT_EQ(podman_only->kind, RuntimeKind::kPodman);
  EXPECT_EQ(podman_only->binary, podman);
}

TEST_F(FindRuntimeTest, TheConfiguredOneOnly) {
  put("a", "docker");
  std::string podman = put("b", "podman");
  auto found = find_container_runtime("podman", {}, path("a") + ":" + path("b"));
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_EQ(found->kind, RuntimeKind::kPodman);
  EXPECT_EQ(found->binary, podman);
  auto missing = find_container_runtime("podman", {}, path("a"));
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
  EXPECT_NE(missing.error().message.find(
                "[containers] runtime = \"podman\", but podman is not on the daemon's PATH (" +
                path("a") + ")"),
            std::string::npos)
      << missing.error().message;
}

TEST_F(FindRuntimeTest, NoneOnThePath) {
  put("a", "docker", 0644);                                    // not executable
  std::filesystem::create_directories(dir_ / "b" / "podman");  // a directory
  auto none =
      find_container_runtime("", {}, path("empty") + "::relative:" + path("a") + ":" + path("b"));
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Code::kNotFound);
  EXPECT_NE(none.error().message.find("neither docker nor podman is on the daemon's PATH"),
            std::string::npos)
      << none.error().message;
}

TEST_F(FindRuntimeTest, OtherNamesAreRefused) {
  put("a", "nerdctl");
  auto other = find_container_runtime("nerdctl", {}, path("a"));
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, Code::kInvalidArgument);
}

}  // namespace
}  // namespace gpuq::runner
