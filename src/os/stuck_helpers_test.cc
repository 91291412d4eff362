// SPDX-License-Identifier: Apache-2.0
// The bound on helpers that SIGKILL cannot end at once. Real children are spawned and really
// killed; the StuckHelperGate seam makes each kill count as stuck and holds its reaping until
// the test lets it go, which is what a child in uninterruptible sleep looks like to run_command.
#include "os/stuck_helpers.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>

#include "os/command.h"

namespace gpuq::os {
namespace {

namespace fs = std::filesystem;

constexpr Millis kGenerous{10000};

// A long sleep whose cancel descriptor is readable from the start: run_command kills it at once.
Result<CommandResult> run_killed_at_once() {
  int cancel = ::eventfd(1, EFD_CLOEXEC);
  CommandOptions options;
  options.cancel_fd = cancel;
  auto result = run_command_with({"sleep", "300"}, kGenerous, options);
  ::close(cancel);
  if (result) {
    EXPECT_TRUE(result->cancelled);
  }
  return result;
}

bool is_listed(pid_t pid) {
  for (const StuckHelper& h : stuck_helpers()) {
    if (h.pid == pid) return true;
  }
  return false;
}

class StuckHelpersTest : public ::testing::Test {
 protected:
  StuckHelpersTest() {
    std::string pattern = (fs::temp_directory_path() / "gpuq-stuck-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
  }
  ~StuckHelpersTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A long sleep killed at once and left stuck in a slot; its pid.
  pid_t make_stuck_helper() {
    auto pid = gate_.stick();
    EXPECT_TRUE(pid) << pid.error().message;
    return pid ? *pid : 0;
  }
  testing::StuckHelperGate gate_;
  std::string dir_;
};

TEST_F(StuckHelpersTest, TheCapIsReachedExactlyAtTheLimit) {
  ASSERT_TRUE(stuck_helpers().empty());
  std::vector<pid_t> pids;
  for (size_t i = 0; i < kMaxStuckHelpers; ++i) {
    // Below the cap a helper still starts and runs normally.
    auto echoed = run_command({"echo", "still running"}, kGenerous);
    ASSERT_TRUE(echoed) << "refused with " << i << " stuck: " << echoed.error().message;
    EXPECT_EQ(echoed->out, "still running\n");
    pids.push_back(make_stuck_helper());
  }
  EXPECT_EQ(stuck_helpers().size(), kMaxStuckHelpers);

  // The next one is refused before anything is started, naming every stuck helper.
  std::string marker = dir_ + "/started";
  auto refused = run_command({"touch", marker}, kGenerous);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kUnavailable);
  const std::string& message = refused.error().message;
  EXPECT_NE(message.find("not starting `touch " + marker + "`"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(kMaxStuckHelpers) + " helper commands are stuck in the kernel"),
            std::string::npos)
      << message;
  for (pid_t pid : pids) {
    EXPECT_NE(message.find(fmt::format("pid {} `sleep 300`", pid)), std::string::npos) << message;
  }
  EXPECT_FALSE(fs::exists(marker)) << "a refused helper ran";
  EXPECT_EQ(stuck_helpers().size(), kMaxStuckHelpers);
}

TEST_F(StuckHelpersTest, ASlotFreesWhenAStuckHelperEnds) {
  auto filled = gate_.fill();
  ASSERT_TRUE(filled) << filled.error().message;
  std::vector<pid_t> pids = *filled;
  ASSERT_FALSE(run_command({"true"}, kGenerous));

  // The oldest one ends: its waiter reaps it and frees its slot.
  ASSERT_TRUE(gate_.release(pids.front()));
  EXPECT_FALSE(is_listed(pids.front()));
  EXPECT_EQ(stuck_helpers().size(), kMaxStuckHelpers - 1);
  errno = 0;
  EXPECT_EQ(::waitpid(pids.front(), nullptr, WNOHANG), -1) << "not reaped";
  EXPECT_EQ(errno, ECHILD);

  // One helper may start again; once it is stuck too, the cap holds again.
  auto echoed = run_command({"echo", "again"}, kGenerous);
  ASSERT_TRUE(echoed) << echoed.error().message;
  EXPECT_EQ(echoed->out, "again\n");
  make_stuck_helper();
  EXPECT_FALSE(run_command({"true"}, kGenerous));
}

TEST_F(StuckHelpersTest, AStuckHelperWasReallyKilled) {
  auto result = run_killed_at_once();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_TRUE(result->stuck);
  auto stuck = stuck_helpers();
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].command, "sleep 300");
  pid_t pid = stuck[0].pid;
  // Killed but not reaped: a zombie, which keeps its pid (and group id) from being reused.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  EXPECT_EQ(info.si_code, CLD_KILLED);
  EXPECT_EQ(info.si_status, SIGKILL);
  EXPECT_TRUE(is_listed(pid));
}

TEST(StuckHelperText, ValuesOfAssignmentsAreLeftOut) {
  EXPECT_EQ(describe_command({"env", "-i", "HF_TOKEN=hf_secret", "PATH=/bin", "bash", "-c",
                              "test -f x", "--query-gpu=index"}),
            "env -i HF_TOKEN=... PATH=... bash -c test -f x --query-gpu=index");
  std::string long_arg(500, 'a');
  EXPECT_EQ(describe_command({"echo", long_arg}).size(), 163u);
}

TEST(StuckHelperText, WithoutTheSeamAKilledHelperIsReapedAtOnce) {
  auto result = run_killed_at_once();
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_FALSE(result->stuck);
  EXPECT_EQ(result->signal, SIGKILL);
  EXPECT_TRUE(stuck_helpers().empty());
}

}  // namespace
}  // namespace gpuq::os
