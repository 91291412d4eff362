// SPDX-License-Identifier: Apache-2.0
#include "os/command.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gpuq::os {
namespace {

using std::chrono::steady_clock;

constexpr Millis kGenerous{10000};

// A process counts as gone once it no longer exists or is a zombie waiting for its new parent
// (in a container, PID 1 may reap late).
bool process_gone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  auto close_paren = line.rfind(')');
  return close_paren == std::string::npos || line.substr(close_paren + 2, 1) == "Z";
}

bool gone_within(pid_t pid, Millis limit) {
  auto deadline = steady_clock::now() + limit;
  while (!process_gone(pid)) {
    if (steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(Millis{10});
  }
  return true;
}

TEST(RunCommandTest, CapturesStdout) {
  auto result = run_command({"echo", "hello", "world"}, kGenerous);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->out, "hello world\n");
  EXPECT_EQ(result->err, "");
  EXPECT_EQ(result->exit_code, 0);
  EXPECT_EQ(result->signal, 0);
  EXPECT_FALSE(result->timed_out);
  EXPECT_FALSE(result->truncated);
}

TEST(RunCommandTest, ReportsExitCode) {
  auto result = run_command({"sh", "-c", "exit 7"}, kGenerous);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->exit_code, 7);
  EXPECT_FALSE(result->timed_out);
}

TEST(RunCommandTest, CapturesStderrSeparately) {
  auto result = run_command({"sh", "-c", "echo to-out; echo to-err >&2; exit 3"}, kGenerous);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->out, "to-out\n");
  EXPECT_EQ(result->err, "to-err\n");
  EXPECT_EQ(result->exit_code, 3);
}

TEST(RunCommandTest, ReportsSignal) {
  auto result = run_command({"sh", "-c", "kill -TERM $$"}, kGenerous);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->signal, SIGTERM);
  EXPECT_EQ(result->exit_code, -1);
  EXPECT_FALSE(result->timed_out);
}

TEST(RunCommandTest, ProgramNotFoundNamesIt) {
  auto result = run_command({"gpuq-no-such-program-xyz", "--help"}, kGenerous);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, Code::kNotFound);
  EXPECT_NE(result.error().message.find("gpuq-no-such-program-xyz"), std::string::npos);
}

TEST(RunCommandTest, MissingAbsolutePathIsNotFound) {
  auto result = run_command({"/nonexistent/dir/tool"}, kGenerous);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, Code::kNotFound);
  EXPECT_NE(result.error().message.find("/nonexistent/dir/tool"), std::string::npos);
}

TEST(RunCommandTest, EmptyArgvIsInvalid) {
  auto result = run_command({}, kGenerous);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, Code::kInvalidArgument);
}

TEST(RunCommandTest, TimeoutKillsQuickly) {
  auto start = steady_clock::now();
  auto result = run_command({"sleep", "5"}, Millis{200});
  auto elapsed = steady_clock::now() - start;
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_TRUE(result->timed_out);
  EXPECT_EQ(result->signal, SIGKILL);
  EXPECT_LT(elapsed, Millis{2000});
}

TEST(RunCommandTest, TimeoutLeavesNoProcessOfTheGroupBehind) {
  // The shell prints its own pid and its background child's pid, then waits; both belong to
  // the command's process group and must be gone after the timeout.
  auto result = run_command({"sh", "-c", "sleep 30 & echo $$ $!; wait"}, Millis{500});
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_TRUE(result->timed_out);
  std::istringstream pids(result->out);
  pid_t shell_pid = 0;
  pid_t sleep_pid = 0;
  ASSERT_TRUE(pids >> shell_pid >> sleep_pid) << "output: " << result->out;
  EXPECT_TRUE(gone_within(shell_pid, Millis{2000}));
  EXPECT_TRUE(gone_within(sleep_pid, Millis{2000}));
}

TEST(RunCommandTest, KeepsOutputWrittenBeforeTimeout) {
  auto result = run_command({"sh", "-c", "echo partial; exec sleep 5"}, Millis{300});
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_TRUE(result->timed_out);
  EXPECT_EQ(result->out, "partial\n");
}

TEST(RunCommandTest, ReadsLargeOutputFully) {
  auto result = run_command({"head", "-c", "1000000", "/dev/zero"}, kGenerous);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->out.size(), 1000000u);
  EXPECT_EQ(result->exit_code, 0);
}

TEST(RunCommandTest, LargeStderrAndStdoutTogetherDoNotDeadlock) {
  // Far beyond a pipe's 64 KiB buffer on both streams at once.
  auto result = run_command(
      {"sh", "-c", "head -c 3000000 /dev/zero >&2; head -c 2000000 /dev/zero"}, kGenerous);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->err.size(), 3000000u);
  EXPECT_EQ(result->out.size(), 2000000u);
}

TEST(RunCommandTest, StdinIsDevNull) {
  auto result = run_command({"cat"}, Millis{5000});
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->out, "");
  EXPECT_EQ(result->exit_code, 0);
}

TEST(RunCommandTest, ChildDoesNotInheritCallerFds) {
  // An fd opened without O_CLOEXEC, as a careless library might.
  int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 0);
  int high = ::dup2(leaky, 57);
  ASSERT_EQ(high, 57);
  auto result = run_command({"sh", "-c", "ls /proc/$$/fd"}, kGenerous);
  ::close(high);
  ::close(leaky);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  std::istringstream fds(result->out);
  std::vector<std::string> names;
  for (std::string name; fds >> name;) names.push_back(name);
  EXPECT_NE(std::find(names.begin(), names.end(), "0"), names.end()) << result->out;
  EXPECT_EQ(std::find(names.begin(), names.end(), "57"), names.end()) << result->out;
  EXPECT_EQ(std::find(names.begin(), names.end(), std::to_string(leaky)), names.end())
      << result->out;
}

TEST(RunCommandTest, ChildRunsInItsOwnProcessGroup) {
  auto result = run_command({"sh", "-c", "ps -o pgid= -p $$; echo $$"}, kGenerous);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  if (result->exit_code != 0) GTEST_SKIP() << "ps unavailable: " << result->err;
  std::istringstream values(result->out);
  pid_t pgid = 0;
  pid_t pid = 0;
  ASSERT_TRUE(values >> pgid >> pid) << result->out;
  EXPECT_EQ(pgid, pid);
  EXPECT_NE(pgid, ::getpgrp());
}

TEST(RunCommandTest, InheritsEnvironment) {
  ::setenv("GPUQ_COMMAND_TEST_VAR", "inherited", 1);
  auto result = run_command({"sh", "-c", "printf %s \"$GPUQ_COMMAND_TEST_VAR\""}, kGenerous);
  ::unsetenv("GPUQ_COMMAND_TEST_VAR");
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->out, "inherited");
}

TEST(RunCommandTest, IgnoredSigpipeIsNotInherited) {
  struct sigaction old_action {};
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old_action);
  // With SIGPIPE at its default, `yes` dies of it as soon as head closes the pipe.
  auto result = run_command({"sh", "-c", "yes | head -c 10 >/dev/null; echo done"}, kGenerous);
  ::sigaction(SIGPIPE, &old_action, nullptr);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->out, "done\n");
  EXPECT_EQ(result->err, "");  // an inherited SIG_IGN makes `yes` report EPIPE on stderr
}

TEST(RunCommandTest, InputReachesStdinThenEndOfFile) {
  CommandOptions options;
  options.input = "line one\nline two\n";
  auto result = run_command_with({"sh", "-c", "cat; echo end"}, kGenerous, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->out, "line one\nline two\nend\n");
  EXPECT_EQ(result->exit_code, 0);
}

TEST(RunCommandTest, LargeInputWhileTheChildWritesDoesNotDeadlock) {
  CommandOptions options;
  options.input = std::string(3'000'000, 'x');
  auto result = run_command_with({"cat"}, kGenerous, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->out.size(), 3'000'000u);
}

TEST(RunCommandTest, InputTheChildNeverReadsIsNoError) {
  // SIGPIPE at its default: sending to a child that has gone must not kill the caller.
  CommandOptions options;
  options.input = std::string(3'000'000, 'x');
  auto result = run_command_with({"sh", "-c", "exit 4"}, kGenerous, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->exit_code, 4);
}

TEST(RunCommandTest, EnvironmentEntriesAreAddedAndReplaced) {
  ::setenv("GPUQ_COMMAND_TEST_VAR", "inherited", 1);
  CommandOptions options;
  options.env = {"GPUQ_COMMAND_TEST_VAR=replaced", "GPUQ_COMMAND_TEST_NEW=a b=c"};
  auto result = run_command_with(
      {"sh", "-c", "printf '%s|%s|' \"$GPUQ_COMMAND_TEST_VAR\" \"$GPUQ_COMMAND_TEST_NEW\"; "
                   "env | grep -c '^GPUQ_COMMAND_TEST_VAR='"},
      kGenerous, options);
  ::unsetenv("GPUQ_COMMAND_TEST_VAR");
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->out, "replaced|a b=c|1\n");
}

TEST(RunCommandTest, CancelFdKillsTheGroupAtOnce) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::thread canceller([&] {
    std::this_thread::sleep_for(Millis{200});
    (void)!::write(fds[1], "x", 1);
  });
  CommandOptions options;
  options.cancel_fd = fds[0];
  auto started = steady_clock::now();
  auto result = run_command_with({"sh", "-c", "sleep 30 & sleep 30"}, Millis{60'000}, options);
  auto elapsed = steady_clock::now() - started;
  canceller.join();
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_TRUE(result->cancelled);
  EXPECT_FALSE(result->timed_out);
  EXPECT_EQ(result->signal, SIGKILL);
  EXPECT_LT(elapsed, std::chrono::seconds(10));
}

}  // namespace
}  // namespace gpuq::os
