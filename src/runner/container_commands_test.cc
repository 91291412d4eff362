// SPDX-License-Identifier: Apache-2.0
// The runtime's commands end to end (runner/container_commands.h) against a stand-in for the
// `docker` binary: a shell script the test writes, which records every argument list it is given
// and behaves as docker would from a few state files (its containers, images, registry, faults).
// No docker daemon and no GPU are needed: GPU flags are checked as the arguments docker gets.
#include "runner/container_commands.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "os/command.h"

namespace gpuq::runner {
namespace {

using Argv = std::vector<std::string>;

// The stand-in; STATE is replaced by the test's directory. Each call appends its arguments to
// STATE/calls, one per line as "arg:WORD", and "end" after them.
constexpr std::string_view kFakeDocker = R"(#!/bin/sh
state='STATE'
{ for a in "$@"; do printf 'arg:%s\n' "$a"; done; echo end; } >> "$state/calls"
if [ -f "$state/down" ]; then
  echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
  exit 1
fi
touch "$state/containers" "$state/images" "$state/registry" "$state/stuck"
forget() { grep -v "^$1 \|^[^ ]* $1 " "$state/containers" > "$state/containers.new"; mv "$state/containers.new" "$state/containers"; }
known() { grep -q "^$1 \|^[^ ]* $1 " "$state/containers"; }
command=$1; shift
case "$command" in
run)
  image=$(cat "$state/run_image")
  while [ $# -gt 0 ]; do
    if [ "$1" = "$image" ]; then shift; exec "$@"; fi
    shift
  done
  echo "docker: invalid reference format." >&2; exit 125 ;;
ps)
  filter=""
  while [ $# -gt 0 ]; do [ "$1" = --filter ] && filter=${2#label=}; shift; done
  awk -v label="$filter" '$3 == label { print $1, $2 }' "$state/containers"; exit 0 ;;
rm)
  shift; status=0
  for id in "$@"; do
    if grep -qx "$id" "$state/stuck"; then
      echo "Error response from daemon: cannot remove container \"/$id\": could not kill: device or resource busy" >&2
      status=1
    else forget "$id"; echo "$id"; fi
  done
  exit $status ;;
stop)
  name=$3
  [ -f "$state/stop_hangs" ] && sleep 30
  if [ -f "$state/stop_fails" ]; then echo "Error response from daemon: cannot stop container: $name: tried to kill container, but did not receive an exit event" >&2; exit 1; fi
  if known "$name"; then forget "$name"; echo "$name"; exit 0; fi
  echo "Error response from daemon: No such container: $name" >&2; exit 1 ;;
kill)
  name=$1
  if [ -f "$state/kill_fails" ]; then echo "Error response from daemon: Cannot kill container: $name: permission denied" >&2; exit 1; fi
  if known "$name"; then forget "$name"; echo "$name"; exit 0; fi
  echo "Error response from daemon: No such container: $name" >&2; exit 1 ;;
image)
  for image; do :; done
  if grep -qx "$image" "$state/images"; then echo "sha256:0123"; exit 0; fi
  echo "Error: No such image: $image" >&2; exit 1 ;;
pull)
  image=$1
  echo "Using default tag: latest"
  echo "latest: Pulling from $image"
  if grep -qx "$image" "$state/registry"; then
    echo "Status: Downloaded newer image for $image"; echo "$image" >> "$state/images"; exit 0
  fi
  echo "Error response from daemon: pull access denied for $image, repository does not exist or may require 'docker login'" >&2
  exit 1 ;;
esac
echo "docker: '$command' is not a docker command." >&2; exit 1
)";

class FakeDockerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("gpuq-fake-docker-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/bin");
    std::string script(kFakeDocker);
    script.replace(script.find("STATE"), 5, dir_);
    std::ofstream(dir_ + "/bin/docker") << script;
    ::chmod((dir_ + "/bin/docker").c_str(), 0755);
    auto found = find_container_runtime("", {"--network", "none"}, dir_ + "/bin");
    ASSERT_TRUE(found) << found.error().message;
    runtime_ = *found;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The argument lists the stand-in was given, in order.
  std::vector<Argv> calls() const {
    std::vector<Argv> calls(1);
    std::istringstream in(read("calls"));
    for (std::string line; std::getline(in, line);) {
      if (line == "end") {
        calls.emplace_back();
      } else {
        calls.back().push_back(line.substr(4));
      }
    }
    calls.pop_back();
    return calls;
  }

  std::string dir_;
  ContainerRuntime runtime_;
};

TEST_F(FakeDockerTest, ARunArgvRunsTheCommandAfterTheImageWithTheGpuFlags) {
  EXPECT_EQ(runtime_.kind, RuntimeKind::kDocker);
  EXPECT_EQ(runtime_.binary, dir_ + "/bin/docker");
  write("run_image", "pytorch:2\n");
  ContainerStep step;
  step.image = "pytorch:2";
  step.run_id = "5-1-ff";
  step.step_index = 1;
  step.job_dir = dir_;
  step.run_dir = dir_ + "/run-1";
  step.env = {{"HF_TOKEN", "t0ken"}};
  step.user = "1000:1000";
  step.gpus = {0, 1};
  step.argv = {"sh", "-c", "echo token=$HF_TOKEN; exit 3"};
  Argv argv = container_run_argv(runtime_, step);
  os::CommandOptions options;
  options.env = {"HF_TOKEN=t0ken"};  // as the shim starts the runtime: with the run's environment
  auto ran = os::run_command_with(argv, Millis(10'000), options);
  ASSERT_TRUE(ran) << ran.error().message;
  EXPECT_EQ(ran->exit_code, 3);
  EXPECT_EQ(ran->out, "token=t0ken\n");
  ASSERT_EQ(calls().size(), 1u);
  EXPECT_EQ(calls()[0], Argv(argv.begin() + 1, argv.end()));
  EXPECT_EQ(calls()[0], (Argv{"run",       "--network",
                              "none",      "--rm",
                              "--pull=never",
                              "--name",    "gpuq-5-1-ff-1",
                              "--label",   "gpuq.run=5-1-ff",
                              "--mount",   "type=bind,source=" + dir_ + ",target=/gpuq/job",
                              "--mount",   "type=bind,source=" + dir_ + "/run-1,target=/gpuq/run",
                              "--workdir", "/gpuq/job",
                              "--user",    "1000:1000",
                              "--gpus",    "\"device=0,1\"",
                              "--env",     "HF_TOKEN",
                              "--env",     "GPUQ_STEP_INDEX",
                              "--env",     "GPUQ_STEP_COUNT",
                              "--env",     "GPUQ_STEP_NAME",
                              "--env",     "CUDA_VISIBLE_DEVICES=0,1",
                              "--env",     "TDPRM_GPU0=0",
                              "pytorch:2", "sh",
                              "-c",        "echo token=$HF_TOKEN; exit 3"}));
}

TEST_F(FakeDockerTest, StopEndsAContainerThroughTheRuntime) {
  write("containers", "c1 gpuq-5-1-ff-0 gpuq.run=5-1-ff\n");
  ASSERT_TRUE(stop_container(runtime_, "gpuq-5-1-ff-0", Millis(2500)));
  EXPECT_EQ(calls(), (std::vector<Argv>{{"stop", "-t", "3", "gpuq-5-1-ff-0"}}));
  EXPECT_EQ(read("containers"), "");
}

TEST_F(FakeDockerTest, StoppingAContainerThatIsGoneIsNotAnError) {
  EXPECT_TRUE(stop_container(runtime_, "gpuq-5-1-ff-0", Millis(0)));
  EXPECT_EQ(calls(), (std::vector<Argv>{{"stop", "-t", "0", "gpuq-5-1-ff-0"}}));
}

TEST_F(FakeDockerTest, AStopThatFailsIsFollowedByKill) {
  write("containers", "c1 gpuq-5-1-ff-0 gpuq.run=5-1-ff\n");
  write("stop_fails", "");
  ASSERT_TRUE(stop_container(runtime_, "gpuq-5-1-ff-0", Millis(1000)));
  EXPECT_EQ(calls(),
            (std::vector<Argv>{{"stop", "-t", "1", "gpuq-5-1-ff-0"}, {"kill", "gpuq-5-1-ff-0"}}));
  EXPECT_EQ(read("containers"), "");
}

TEST_F(FakeDockerTest, AStopWithoutAnswerIsFollowedByKill) {
  write("containers", "c1 gpuq-5-1-ff-0 gpuq.run=5-1-ff\n");
  write("stop_hangs", "");
  ASSERT_TRUE(stop_container(runtime_, "gpuq-5-1-ff-0", Millis(0), Millis(500)));
  ASSERT_EQ(calls().size(), 2u);
  EXPECT_EQ(calls()[1], (Argv{"kill", "gpuq-5-1-ff-0"}));
}

TEST_F(FakeDockerTest, AContainerThatWillNotStopIsAnErrorWithTheRuntimesWords) {
  write("containers", "c1 gpuq-5-1-ff-0 gpuq.run=5-1-ff\n");
  write("stop_fails", "");
  write("kill_fails", "");
  auto stopped = stop_container(runtime_, "gpuq-5-1-ff-0", Millis(1000));
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().message,
            "cannot stop container gpuq-5-1-ff-0: docker stop -t 1 gpuq-5-1-ff-0: Error response "
            "from daemon: cannot "
            "stop container: gpuq-5-1-ff-0: tried to kill container, but did not receive an exit "
            "event; then docker "
            "kill gpuq-5-1-ff-0: Error response from daemon: Cannot kill container: gpuq-5-1-ff-0: "
            "permission denied");
}

TEST_F(FakeDockerTest, CleanupFindsTheRunsContainersByLabelAndRemovesThem) {
  write("containers",
        "c1 gpuq-5-1-ff-0 gpuq.run=5-1-ff\nc2 gpuq-5-1-ff-1 gpuq.run=5-1-ff\nc3 gpuq-6-1-aa-0 "
        "gpuq.run=6-1-aa\n");
  auto cleanup = cleanup_run_containers(runtime_, "5-1-ff");
  ASSERT_TRUE(cleanup) << cleanup.error().message;
  EXPECT_TRUE(cleanup->confirmed());
  EXPECT_EQ(cleanup->removed,
            (std::vector<ContainerRef>{{"c1", "gpuq-5-1-ff-0"}, {"c2", "gpuq-5-1-ff-1"}}));
  Argv ps = {"ps",
             "-a",
             "--no-trunc",
             "--filter",
             "label=gpuq.run=5-1-ff",
             "--format",
             "{{.ID}} {{.Names}}"};
  EXPECT_EQ(calls(), (std::vector<Argv>{ps, {"rm", "-f", "c1", "c2"}, ps}));
  EXPECT_EQ(read("containers"), "c3 gpuq-6-1-aa-0 gpuq.run=6-1-aa\n");  // another run's stays
}

TEST_F(FakeDockerTest, CleanupOfARunWithoutContainersListsOnce) {
  auto cleanup = cleanup_run_containers(runtime_, "5-1-ff");
  ASSERT_TRUE(cleanup) << cleanup.error().message;
  EXPECT_TRUE(cleanup->confirmed());
  EXPECT_TRUE(cleanup->removed.empty());
  EXPECT_EQ(calls().size(), 1u);
}

TEST_F(FakeDockerTest, CleanupReportsWhatWouldNotGo) {
  write("containers", "c1 gpuq-5-1-ff-0 gpuq.run=5-1-ff\nc2 gpuq-5-1-ff-1 gpuq.run=5-1-ff\n");
  write("stuck", "c2\n");
  auto cleanup = cleanup_run_containers(runtime_, "5-1-ff");
  ASSERT_TRUE(cleanup) << cleanup.error().message;
  EXPECT_FALSE(cleanup->confirmed());
  EXPECT_EQ(cleanup->removed, (std::vector<ContainerRef>{{"c1", "gpuq-5-1-ff-0"}}));
  EXPECT_EQ(cleanup->left, (std::vector<ContainerRef>{{"c2", "gpuq-5-1-ff-1"}}));
  EXPECT_EQ(cleanup->message,
            "docker rm -f c1 c2: Error response from daemon: cannot remove container \"/c2\": "
            "could not kill: device "
            "or resource busy");
}

TEST_F(FakeDockerTest, CleanupCannotConfirmWithoutTheRuntime) {
  write("down", "");
  auto cleanup = cleanup_run_containers(runtime_, "5-1-ff");
  ASSERT_FALSE(cleanup);
  EXPECT_EQ(cleanup.error().code, Code::kUnavailable);
  EXPECT_NE(cleanup.error().message.find(
                "docker ps -a --no-trunc --filter label=gpuq.run=5-1-ff --format {{.ID}} "
                "{{.Names}}: Cannot connect to the Docker daemon"),
            std::string::npos)
      << cleanup.error().message;
}

TEST_F(FakeDockerTest, ImagePresence) {
  write("images", "busybox:1\n");
  auto present = image_present(runtime_, "busybox:1");
  ASSERT_TRUE(present) << present.error().message;
  EXPECT_TRUE(*present);
  auto absent = image_present(runtime_, "alpine:3");
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_FALSE(*absent);
  EXPECT_EQ(calls()[0], (Argv{"image", "inspect", "--format", "{{.Id}}", "busybox:1"}));
  write("down", "");
  auto unknown = image_present(runtime_, "busybox:1");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("Cannot connect to the Docker daemon"), std::string::npos);
}

// A log opened for reading and appending, as the daemon opens a job's pull log.
struct LogFd {
  explicit LogFd(const std::string& path) : fd(::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) {}
  ~LogFd() { ::close(fd); }
  int fd;
};

TEST_F(FakeDockerTest, APullStreamsItsOutputToTheLog) {
  write("registry", "busybox:1\n");
  write("output.log", "the job's earlier output\n");
  LogFd log(dir_ + "/output.log");
  ASSERT_TRUE(pull_image(runtime_, "busybox:1", log.fd, Millis(10'000)));
  EXPECT_EQ(read("output.log"),
            "the job's earlier output\nUsing default tag: latest\nlatest: Pulling from busybox:1\n"
            "Status: Downloaded newer image for busybox:1\n");
  EXPECT_EQ(calls(), (std::vector<Argv>{{"pull", "busybox:1"}}));
  EXPECT_TRUE(*image_present(runtime_, "busybox:1"));
}

TEST_F(FakeDockerTest, AFailedPullSaysWhyInTheRuntimesWords) {
  write("output.log", "Error: an old line of the job's\n");
  LogFd log(dir_ + "/output.log");
  auto pulled = pull_image(runtime_, "nope:1", log.fd, Millis(10'000));
  ASSERT_FALSE(pulled);
  EXPECT_EQ(pulled.error().message,
            "docker pull nope:1: Error response from daemon: pull access denied for nope:1, "
            "repository does not exist "
            "or may require 'docker login'");
  EXPECT_NE(read("output.log").find("latest: Pulling from nope:1\nError response from daemon"),
            std::string::npos);
  auto captured = pull_image(runtime_, "nope:1", -1, Millis(10'000));
  ASSERT_FALSE(captured);
  EXPECT_EQ(captured.error().message, pulled.error().message);
}

TEST_F(FakeDockerTest, APullThatIsCancelledEndsAtOnce) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "x", 1), 1);
  // A runtime whose pull would take 30 s.
  std::ofstream(dir_ + "/bin/slow") << "#!/bin/sh\nsleep 30\n";
  ::chmod((dir_ + "/bin/slow").c_str(), 0755);
  ContainerRuntime slow = runtime_;
  slow.binary = dir_ + "/bin/slow";
  LogFd log(dir_ + "/output.log");
  auto pulled = pull_image(slow, "busybox:1", log.fd, Millis(20'000), fds[0]);
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_FALSE(pulled);
  EXPECT_EQ(pulled.error().message, "docker pull busybox:1: cancelled");
}

}  // namespace
}  // namespace gpuq::runner
