// SPDX-License-Identifier: Apache-2.0
// The container runtime layer against a real podman (runner/container_runtime.h,
// container_commands.h): the argv gpuq builds runs a container that sees its mounts, working
// directory, variables and user, and whose exit status comes back; a stop through the runtime
// ends it and leaves no container; cleanup by label removes one left behind; an image's presence
// and a failed pull. The image is busybox imported from a tar (make_test_image.sh): no registry.
//
// Every test SKIPs, saying why, where podman cannot run (not installed, not root, no static
// busybox, or a container does not start). Everything the tests start carries the label
// gpuq.test=PID and is removed at the end, with the image.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "os/command.h"
#include "runner/container_commands.h"
#include "runner/container_runtime.h"

namespace gpuq::runner {
namespace {

using Argv = std::vector<std::string>;

// "nofile=N:N", N at most 1024 and the current limit: podman otherwise sets the limits it likes,
// and a machine that is itself a container (as CI's) may refuse even the current ones.
std::string ulimit_arg(const char* name, int resource) {
  rlimit limit{};
  ::getrlimit(resource, &limit);
  rlim_t n = std::min<rlim_t>(limit.rlim_cur, 1024);
  return fmt::format("{}={}:{}", name, n, n);
}

std::string test_label() { return fmt::format("gpuq.test={}", ::getpid()); }

// The runtime and image every test uses, made once per test program; `skip` says why not.
struct Podman {
  ContainerRuntime runtime;
  std::string image;
  std::string skip;
};

Podman& podman() {
  static Podman p;
  return p;
}

class PodmanTest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    Podman& p = podman();
    if (::geteuid() != 0) {
      p.skip =
          "podman tests run as root only (rootless podman needs a user session these tests do not "
          "set up)";
      return;
    }
    const char* path = std::getenv("PATH");
    // crun refuses the hybrid cgroup layout of some machines: runc runs everywhere. No network:
    // nothing here needs one, and a container starts faster without it.
    Argv extra = {"--runtime", "runc",
                  "--network", "none",
                  "--ulimit",  ulimit_arg("nofile", RLIMIT_NOFILE),
                  "--ulimit",  ulimit_arg("nproc", RLIMIT_NPROC),
                  "--label",   test_label()};
    auto found = find_container_runtime("podman", extra, path ? path : "");
    if (!found) {
      p.skip = "podman is not installed (Debian: apt-get install podman runc busybox-static): " +
               found.error().message;
      return;
    }
    p.runtime = *found;
    p.image = fmt::format("localhost/gpuq-test-busybox:{}", ::getpid());
    auto made = os::run_command({GPUQ_MAKE_TEST_IMAGE, p.image}, Millis(60'000));
    if (!made || made->exit_code != 0) {
      p.skip = "cannot make the test image: " + (made ? made->err : made.error().message);
      return;
    }
    Argv probe = {p.runtime.binary, "run", "--rm"};
    probe.insert(probe.end(), extra.begin(), extra.end());
    probe.insert(probe.end(), {p.image, "true"});
    auto ran = os::run_command(probe, Millis(60'000));
    if (!ran || ran->exit_code != 0) {
      p.skip = "podman cannot run a container here: " + (ran ? ran->err : ran.error().message);
    }
  }

  static void TearDownTestSuite() {
    Podman& p = podman();
    if (p.runtime.binary.empty()) return;
    auto left = os::run_command(
        {p.runtime.binary, "ps", "-a", "-q", "--filter", "label=" + test_label()}, Millis(30'000));
    if (left && !left->out.empty()) {
      Argv rm = {p.runtime.binary, "rm", "-f", "-t", "0"};
      std::istringstream ids(left->out);
      for (std::string id; ids >> id;) rm.push_back(id);
      (void)os::run_command(rm, Millis(30'000));
    }
    if (!p.image.empty())
      (void)os::run_command({p.runtime.binary, "rmi", "-f", p.image}, Millis(30'000));
  }

 protected:
  void SetUp() override {
    if (!podman().skip.empty()) GTEST_SKIP() << podman().skip;
    runtime_ = podman().runtime;
    image_ = podman().image;
    const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    job_dir_ = (std::filesystem::temp_directory_path() /
                fmt::format("gpuq-podman-{}-{}", ::getpid(), name))
                   .string();
    run_dir_ = job_dir_ + "/run-1";
    run_id_ = fmt::format("{}-1-{}", ::getpid(), name);
    std::filesystem::remove_all(job_dir_);
    std::filesystem::create_directories(run_dir_);
    // The container's user is not the directories' owner here (the daemon's user is, in
    // personal mode): let it in.
    ::chmod(job_dir_.c_str(), 0755);
    ::chmod(run_dir_.c_str(), 0777);
  }
  void TearDown() override {
    if (!job_dir_.empty()) std::filesystem::remove_all(job_dir_);
  }

  ContainerStep step(Argv argv) const {
    ContainerStep s;
    s.image = image_;
    s.run_id = run_id_;
    s.job_dir = job_dir_;
    s.run_dir = run_dir_;
    s.argv = std::move(argv);
    return s;
  }

  // The run argv as the shim runs it: with the run's environment.
  static Result<os::CommandResult> run(const ContainerStep& s, const Argv& extra_env = {}) {
    os::CommandOptions options;
    for (const auto& [name, value] : s.env) options.env.push_back(name + "=" + value);
    options.env.insert(options.env.end(), extra_env.begin(), extra_env.end());
    return os::run_command_with(container_run_argv(podman().runtime, s), Millis(60'000), options);
  }

  std::vector<ContainerRef> listed() const {
    auto refs = list_run_containers(runtime_, run_id_);
    EXPECT_TRUE(refs) << refs.error().message;
    return refs ? *refs : std::vector<ContainerRef>{};
  }

  ContainerRuntime runtime_;
  std::string image_, job_dir_, run_dir_, run_id_;
};

TEST_F(PodmanTest, AContainerRunsWithItsMountsVariablesUserAndExitStatus) {
  std::ofstream(job_dir_ + "/input") << "from the job directory\n";
  std::ofstream(job_dir_ + "/script")
      << "echo \"pwd=$(pwd)\"\n"
         "echo \"id=$(id -u):$(id -g)\"\n"
         "echo \"input=$(cat /gpuq/job/input)\"\n"
         "for v in GPUQ_JOB_DIR GPUQ_RUN_DIR GPUQ_YIELD_FILE GPUQ_JOB_ID GPUQ_STEP_INDEX "
         "HF_TOKEN CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES PATH LD_PRELOAD; do\n"
         "  eval \"echo $v=\\${$v-unset}\"\n"
         "done\n"
         "echo written > \"$GPUQ_RUN_DIR/out\"\n"
         "exit 7\n";
  ContainerStep s = step({"sh", job_dir_ + "/script"});
  s.user = "1234:1234";
  s.env = {{"GPUQ_JOB_DIR", job_dir_},
           {"GPUQ_RUN_DIR", run_dir_},
           {"GPUQ_YIELD_FILE", run_dir_ + "/yield"},
           {"GPUQ_JOB_ID", "7"},
           {"HF_TOKEN", "t0ken"},
           {"CUDA_VISIBLE_DEVICES", "5"},
           {"PATH", "/host/only:/usr/bin"},
           {"LD_PRELOAD", "/host.so"}};
  auto ran = run(s, {"GPUQ_STEP_INDEX=2"});
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 7) << ran->err;
  EXPECT_EQ(ran->out,
            "pwd=/gpuq/job\n"
            "id=1234:1234\n"
            "input=from the job directory\n"
            "GPUQ_JOB_DIR=/gpuq/job\n"
            "GPUQ_RUN_DIR=/gpuq/run\n"
            "GPUQ_YIELD_FILE=/gpuq/run/yield\n"
            "GPUQ_JOB_ID=7\n"
            "GPUQ_STEP_INDEX=2\n"
            "HF_TOKEN=t0ken\n"
            "CUDA_VISIBLE_DEVICES=\n"
            "NVIDIA_VISIBLE_DEVICES=void\n"
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
            "LD_PRELOAD=unset\n")
      << ran->err;
  std::ifstream out(run_dir_ + "/out");
  std::string written;
  std::getline(out, written);
  EXPECT_EQ(written, "written");
  struct stat st {};
  ASSERT_EQ(::stat((run_dir_ + "/out").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1234u);
  EXPECT_TRUE(listed().empty()) << "--rm left the container";
}

// A shared box's container step (docs/lab.md, "Containers"): the runtime runs as root with its
// own environment; the job's variables come from the env file on fd 3 (here a file the shell
// opens there, as the shim gives its memory file), the container runs as the user with their
// groups, no capability and no way to gain one.
TEST_F(PodmanTest, ForAnotherUserVariablesComeFromTheEnvFileAndNothingCanBeGained) {
  ContainerStep s = step({"sh", "-c",
                          "echo id=$(id -u):$(id -g) groups=$(id -G); "
                          "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; "
                          "echo token=$HF_TOKEN step=$GPUQ_STEP_INDEX run=$GPUQ_RUN_DIR"});
  s.user = "1234:1234";
  s.groups = {1234, 4321};
  s.env_file = true;
  s.confined = true;
  s.env = {{"HF_TOKEN", "t0ken"}, {"GPUQ_RUN_DIR", run_dir_}};
  const std::string env_file = job_dir_ + ".env";
  std::ofstream(env_file) << "HF_TOKEN=t0ken\nGPUQ_STEP_INDEX=2\n";
  Argv argv = {"/bin/sh", "-c", "exec \"$@\" 3<\"$0\"", env_file};
  Argv run_argv = container_run_argv(runtime_, s);
  argv.insert(argv.end(), run_argv.begin(), run_argv.end());
  auto ran = os::run_command(argv, Millis(60'000));  // nothing of the job in its environment
  std::filesystem::remove(env_file);
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 0) << ran->err;
  EXPECT_NE(ran->out.find("id=1234:1234 groups="), std::string::npos) << ran->out;
  EXPECT_NE(ran->out.find("4321"), std::string::npos) << ran->out;
  EXPECT_NE(ran->out.find("CapEff:\t0000000000000000\n"), std::string::npos) << ran->out;
  EXPECT_NE(ran->out.find("NoNewPrivs:\t1\n"), std::string::npos) << ran->out;
  EXPECT_NE(ran->out.find("token=t0ken step=2 run=/gpuq/run\n"), std::string::npos) << ran->out;
  EXPECT_TRUE(listed().empty());
}

TEST_F(PodmanTest, AStopThroughTheRuntimeEndsItAndLeavesNoContainer) {
  // The job ends on SIGTERM (PID 1 has no default action for it): the stop's own signal, not the
  // SIGKILL after the grace, ends it.
  ContainerStep s =
      step({"sh", "-c",
            "trap 'echo got TERM; exit 143' TERM; echo started; while :; do sleep 0.1; done"});
  auto running = std::async(std::launch::async, [s] { return run(s); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (listed().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(listed().size(), 1u);
  auto started = std::chrono::steady_clock::now();
  auto stopped = stop_container(runtime_, container_name(run_id_, 0), Millis(20'000));
  EXPECT_TRUE(stopped) << stopped.error().message;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10))
      << "the grace ran out: no SIGTERM";
  auto ran = running.get();
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 143) << ran->out << ran->err;
  EXPECT_NE(ran->out.find("got TERM"), std::string::npos) << ran->out;
  EXPECT_TRUE(listed().empty());
  // A second stop finds nothing to stop: not an error.
  EXPECT_TRUE(stop_container(runtime_, container_name(run_id_, 0), Millis(1000)));
}

TEST_F(PodmanTest, CleanupByLabelRemovesAContainerLeftBehind) {
  // As one whose shim was killed leaves it: running, detached, with the run's label.
  Argv detached = {runtime_.binary, "run", "-d"};
  detached.insert(detached.end(), runtime_.extra_args.begin(), runtime_.extra_args.end());
  detached.insert(detached.end(), {"--name", container_name(run_id_, 0), "--label",
                                   container_label(run_id_), image_, "sleep", "600"});
  auto started = os::run_command(detached, Millis(60'000));
  ASSERT_TRUE(started) << started.error().message;
  ASSERT_EQ(started->exit_code, 0) << started->err;
  std::string id = started->out.substr(0, started->out.find('\n'));
  EXPECT_EQ(listed(), (std::vector<ContainerRef>{{id, container_name(run_id_, 0)}}));
  auto cleanup = cleanup_run_containers(runtime_, run_id_);
  ASSERT_TRUE(cleanup) << cleanup.error().message;
  EXPECT_TRUE(cleanup->confirmed()) << cleanup->message;
  EXPECT_EQ(cleanup->removed, (std::vector<ContainerRef>{{id, container_name(run_id_, 0)}}));
  EXPECT_TRUE(listed().empty());
}

TEST_F(PodmanTest, ImagePresenceAndAFailedPull) {
  auto present = image_present(runtime_, image_);
  ASSERT_TRUE(present) << present.error().message;
  EXPECT_TRUE(*present);
  auto absent = image_present(runtime_, "localhost/gpuq-test-no-such-image:1");
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_FALSE(*absent);
  // No registry is reachable from here (.invalid never resolves): the runtime's message comes
  // back, and its output is in the log.
  const std::string log = run_dir_ + "/output.log";
  int log_fd = ::open(log.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(log_fd, 0);
  auto pulled = pull_image(runtime_, "gpuq-test.invalid/nothing:1", log_fd, Millis(60'000));
  ::close(log_fd);
  ASSERT_FALSE(pulled);
  EXPECT_EQ(pulled.error().message.rfind("podman pull gpuq-test.invalid/nothing:1: Error: ", 0), 0u)
      << pulled.error().message;
  EXPECT_NE(pulled.error().message.find("gpuq-test.invalid"), std::string::npos);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("Trying to pull gpuq-test.invalid/nothing:1"), std::string::npos)
      << text.str();
}

}  // namespace
}  // namespace gpuq::runner
