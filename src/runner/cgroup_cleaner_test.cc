// SPDX-License-Identifier: Apache-2.0
// The cgroup cleaner against real processes in a private cgroup v2 subtree: a job that
// double-forks a setsid'd sleeper is still killed, and the cleanup is confirmed by
// `populated 0` (inotify); a busy job's CPU time is accounted. Skipped where no cgroup v2
// subtree can be written.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <future>

#include "os/process.h"
#include "runner/cgroup.h"
#include "runner/cgroup_cleaner.h"
#include "runner/cgroup_test_support.h"

namespace gpuq::runner {
namespace {

// Forks a child that waits for a byte on a pipe, places it in the run's group, lets it go
// and returns its pid. `job` runs in the child.
template <typename Job>
pid_t start_placed(RunCgroups& tree, const std::string& run_id, Job job) {
  int go[2];
  EXPECT_EQ(::pipe(go), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(go[1]);
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(3);
    job();
    ::_exit(0);
  }
  ::close(go[0]);
  EXPECT_TRUE(tree.place(run_id, pid));
  EXPECT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  return pid;
}

// Alive and not a zombie (a killed orphan waits for its new parent to reap it).
bool alive(pid_t pid, uint64_t ticks) {
  if (!os::is_same_process(pid, ticks)) return false;
  auto stat = os::read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  auto close = stat->rfind(')');
  return close == std::string::npos || stat->substr(close + 2, 1) != "Z";
}

class CgroupCleanerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!root_.available()) GTEST_SKIP() << root_.why_not();
    ASSERT_TRUE(tree_.prepare());
    auto started = CgroupCleaner::start(*files_, CleanupLimits{50, 1000, 10'000});
    ASSERT_TRUE(started);
    cleaner_ = std::move(*started);
  }

  CleanupOutcome clean(const std::string& run_id) {
    std::promise<CleanupOutcome> promise;
    cleaner_->add(9, tree_.group_of(run_id), [&](CleanupOutcome o) { promise.set_value(std::move(o)); });
    return promise.get_future().get();
  }

  testing::PrivateCgroupRoot root_;
  std::unique_ptr<CgroupFiles> files_ = make_real_cgroup_files();
  RunCgroups tree_{*files_, root_.path()};
  std::unique_ptr<CgroupCleaner> cleaner_;
};

TEST_F(CgroupCleanerTest, ASetsidDoubleForkedSleeperIsKilledAndCleanupConfirmed) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  pid_t job = start_placed(tree_, "1-1-a", [&] {
    if (::fork() == 0) {  // the first fork leaves; its child escapes the session
      ::setsid();
      if (::fork() == 0) {
        pid_t me = ::getpid();
        (void)!::write(report[1], &me, sizeof me);
        ::execlp("sleep", "sleep", "300", nullptr);
        ::_exit(127);
      }
      ::_exit(0);
    }
  });
  ::close(report[1]);
  pid_t sleeper = 0;
  ASSERT_EQ(::read(report[0], &sleeper, sizeof sleeper), static_cast<ssize_t>(sizeof sleeper));
  ::close(report[0]);
  ASSERT_EQ(::waitpid(job, nullptr, 0), job);
  auto ticks = os::process_start_ticks(sleeper);
  ASSERT_TRUE(ticks);  // it escaped the job's session and outlived the job

  CleanupOutcome outcome = clean("1-1-a");
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_TRUE(outcome.by_cgroup);
  EXPECT_GE(outcome.killed_total, 1);
  EXPECT_FALSE(alive(sleeper, *ticks));
  EXPECT_FALSE(tree_.existing_group("1-1-a").has_value());
}

TEST_F(CgroupCleanerTest, ABusyJobsCpuTimeIsAccounted) {
  pid_t job = start_placed(tree_, "2-1-b", [] {
    timespec used{};
    while (used.tv_sec * 1000 + used.tv_nsec / 1'000'000 < 200) ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &used);
  });
  ASSERT_EQ(::waitpid(job, nullptr, 0), job);
  CleanupOutcome outcome = clean("2-1-b");
  EXPECT_TRUE(outcome.confirmed);
  EXPECT_TRUE(outcome.killed.empty());
  ASSERT_TRUE(outcome.usage.cpu_usec);
  // The cgroup's count is sampled differently from the process clock: allow a little less.
  EXPECT_GE(*outcome.usage.cpu_usec, 150'000);
}

TEST_F(CgroupCleanerTest, ARunningJobIsStoppedByCgroupKill) {
  pid_t job = start_placed(tree_, "3-1-c", [] { ::execlp("sleep", "sleep", "300", nullptr); });
  CleanupOutcome outcome = clean("3-1-c");
  EXPECT_TRUE(outcome.confirmed);
  ASSERT_EQ(outcome.killed.size(), 1u);
  EXPECT_EQ(outcome.killed[0].pid, job);
  int status = 0;
  ASSERT_EQ(::waitpid(job, &status, 0), job);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

}  // namespace
}  // namespace gpuq::runner
