// SPDX-License-Identifier: Apache-2.0
// The /proc process table against real processes.
#include "os/process_table.h"

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/process.h"

namespace gpuq::os {
namespace {

// Starts argv with exactly `env`; posix_spawn returns after the exec.
pid_t spawn(std::vector<std::string> argv, std::vector<std::string> env) {
  std::vector<char*> a, e;
  for (auto& s : argv) a.push_back(s.data());
  a.push_back(nullptr);
  for (auto& s : env) e.push_back(s.data());
  e.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  for (int fd : {0, 1, 2}) {
    posix_spawn_file_actions_addopen(&files, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  pid_t pid = 0;
  EXPECT_EQ(::posix_spawn(&pid, a[0], &files, nullptr, a.data(), e.data()), 0);
  posix_spawn_file_actions_destroy(&files);
  return pid;
}

// The last pid given: a process started just now has it (nothing else on this machine is
// expected to start in between, but anything that does only makes it larger), and the next
// reading is no lower unless pids wrapped.
TEST(LinuxProcessTable, TheLastPidGivenIsTheNewestProcesssOrLater) {
  auto table = make_linux_process_table();
  auto before = table->last_pid();
  ASSERT_TRUE(before);
  pid_t child = spawn({"/bin/true"}, {});
  auto after = table->last_pid();
  ASSERT_TRUE(after);
  ::waitpid(child, nullptr, 0);
  if (*after < *before) GTEST_SKIP() << "pids wrapped between the readings";
  EXPECT_GE(*after, child);
  EXPECT_GT(child, *before);
}

TEST(LinuxProcessTable, ListsAndDescribesThisProcess) {
  auto table = make_linux_process_table();
  auto pids = table->pids();
  EXPECT_NE(std::find(pids.begin(), pids.end(), ::getpid()), pids.end());
  auto facts = table->facts(::getpid());
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->pid, ::getpid());
  EXPECT_EQ(facts->ppid, ::getppid());
  EXPECT_EQ(facts->start_ticks, *process_start_ticks(::getpid()));
  EXPECT_EQ(facts->uid, ::geteuid());
  EXPECT_FALSE(facts->zombie);
  EXPECT_FALSE(table->facts(0));
  EXPECT_FALSE(table->facts(999'999'999));
  EXPECT_EQ(table->cmdline(999'999'999), "");
}

TEST(LinuxProcessTable, ReadsOneVariableAndTheCommandLine) {
  auto table = make_linux_process_table();
  pid_t child = spawn({"/bin/sleep", "30"},
                      {"A=1", "GPUQ_RUN_IDX=no", "GPUQ_RUN_ID=12-3-00f3", "EMPTY=", "Z=2"});
  // posix_spawn returns once the exec has begun; the new environment shows a moment later.
  for (int i = 0; i < 2000 && !table->env_value(child, "A"); ++i) ::usleep(1000);
  EXPECT_EQ(table->env_value(child, "GPUQ_RUN_ID"), "12-3-00f3");
  EXPECT_EQ(table->env_value(child, "A"), "1");
  EXPECT_EQ(table->env_value(child, "Z"), "2");
  EXPECT_EQ(table->env_value(child, "EMPTY"), "");
  EXPECT_EQ(table->env_value(child, "GPUQ_RUN"), std::nullopt);
  EXPECT_EQ(table->env_value(child, "MISSING"), std::nullopt);
  EXPECT_EQ(table->cmdline(child), "/bin/sleep 30");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(table->env_value(child, "GPUQ_RUN_ID"), std::nullopt);
  EXPECT_EQ(table->cmdline(child), "");
}

TEST(LinuxProcessTable, SignalsOnlyTheProcessThatStartedAtTheGivenTicks) {
  auto table = make_linux_process_table();
  pid_t child = spawn({"/bin/sleep", "30"}, {});
  auto facts = table->facts(child);
  ASSERT_TRUE(facts);
  // Other start ticks: a reused pid. Not signalled.
  EXPECT_EQ(table->signal(child, facts->start_ticks + 1, SIGKILL), SignalResult::kGone);
  EXPECT_EQ(table->signal(child, facts->start_ticks - 1, SIGKILL), SignalResult::kGone);
  EXPECT_TRUE(is_same_process(child, facts->start_ticks));
  EXPECT_EQ(table->signal(child, facts->start_ticks, SIGKILL), SignalResult::kSent);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(table->signal(child, facts->start_ticks, SIGKILL), SignalResult::kGone);
  EXPECT_FALSE(table->facts(child));
}

TEST(LinuxProcessTable, ZombieIsSeenAsOneAndNotSignalled) {
  auto table = make_linux_process_table();
  pid_t child = spawn({"/bin/true"}, {});
  auto ticks = process_start_ticks(child);
  ASSERT_TRUE(ticks);
  siginfo_t info{};
  // Wait for the exit without reaping it.
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  auto facts = table->facts(child);
  ASSERT_TRUE(facts);
  EXPECT_TRUE(facts->zombie);
  EXPECT_EQ(facts->start_ticks, *ticks);
  EXPECT_EQ(table->signal(child, *ticks, SIGTERM), SignalResult::kGone);
  EXPECT_EQ(table->cmdline(child), "[true]");
  ::waitpid(child, nullptr, 0);
}

TEST(LinuxProcessTable, CommandNameWithSpacesAndParenthesesParses) {
  auto table = make_linux_process_table();
  // bash -c 'exec -a ...' sets argv[0]; the comm comes from the file name, so use a link.
  std::string link = "/tmp/gpuq pt) (x " + std::to_string(::getpid());
  ASSERT_EQ(::symlink("/bin/sleep", link.c_str()), 0);
  pid_t child = spawn({link, "30"}, {});
  auto facts = table->facts(child);
  ::unlink(link.c_str());
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->ppid, ::getpid());
  EXPECT_EQ(facts->start_ticks, *process_start_ticks(child));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(UserName, NamesAUserOrFallsBackToTheNumber) {
  EXPECT_EQ(user_name(0), "root");
  EXPECT_EQ(user_name(4'000'000'123u), "4000000123");
}

}  // namespace
}  // namespace gpuq::os
