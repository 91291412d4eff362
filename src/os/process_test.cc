// SPDX-License-Identifier: Apache-2.0
#include "os/process.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace gpuq::os {
namespace {

TEST(Process, StartTicksTellAProcessFromAReusedPid) {
  auto ticks = process_start_ticks(getpid());
  ASSERT_TRUE(ticks) << ticks.error().message;
  EXPECT_TRUE(is_same_process(getpid(), *ticks));
  EXPECT_FALSE(is_same_process(getpid(), *ticks + 1));
  EXPECT_FALSE(is_same_process(0, *ticks));
}

TEST(Process, PidfdBecomesReadableWhenTheProcessExits) {
  pid_t child = fork();
  if (child == 0) {
    usleep(50'000);
    _exit(3);
  }
  auto fd = open_pidfd(child);
  ASSERT_TRUE(fd) << fd.error().message;
  pollfd p{*fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 3);
  close(*fd);
}

TEST(Process, GroupAliveUntilItsLastMemberDies) {
  pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);
    pause();
    _exit(0);
  }
  setpgid(child, child);
  EXPECT_TRUE(process_group_alive(child));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(process_group_alive(child));
}

TEST(Files, AtomicWriteReplacesWholly) {
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-os-" + std::to_string(getpid()));
  ASSERT_TRUE(make_dirs((dir / "a/b").string()));
  auto path = (dir / "a/b/exit.json").string();
  ASSERT_TRUE(write_file_atomic(path, "first"));
  ASSERT_TRUE(write_file_atomic(path, "second"));
  EXPECT_EQ(*read_file(path), "second");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(Files, AtomicWriteNeverWritesThroughALinkLeftAtItsTemporaryName) {
  // A run directory a container step can write: it leaves steps.json.tmp pointing elsewhere.
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-os-link-" + std::to_string(getpid()));
  ASSERT_TRUE(make_dirs(dir.string()));
  auto victim = (dir / "victim").string();
  ASSERT_TRUE(write_file_atomic(victim, "keep me"));
  auto path = (dir / "steps.json").string();
  std::filesystem::create_symlink(victim, path + ".tmp");
  ASSERT_TRUE(write_file_atomic(path, "[]"));
  EXPECT_EQ(*read_file(victim), "keep me");
  EXPECT_EQ(*read_file(path), "[]");
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuq::os
