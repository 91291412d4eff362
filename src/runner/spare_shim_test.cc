// SPDX-License-Identifier: Apache-2.0
// A spare shim (runner/spare_shim.h) against the real gpuq-shim: assigned a run, it runs it as a
// shim launched for it would; unassigned or dead, it is never handed a run and never left behind.
#include "runner/spare_shim.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "os/process.h"
#include "runner/run_files.h"
#include "runner/shim.h"

namespace gpuq::runner {
namespace {

class SpareShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("gpuq-spare-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write_spec(const std::string& run_dir, std::vector<std::string> argv) {
    RunSpec spec;
    spec.argv = std::move(argv);
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.cwd = dir_;
    ASSERT_TRUE(write_run_spec(run_dir, spec));
  }
  // Whether `pid` is still a child of this process (alive or a zombie not reaped yet).
  static bool still_a_child(pid_t pid) {
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0;
  }
  // The spares take() passed over are exactly `pids`, and dropping them reaps each.
  static void expect_retired(SpareShim& spare, const std::vector<pid_t>& pids) {
    std::vector<SpareShim::Started> retired = spare.retired();
    std::vector<pid_t> got;
    for (const auto& r : retired) got.push_back(r.pid());
    EXPECT_EQ(got, pids);
    EXPECT_TRUE(spare.retired().empty()) << "handed out once";
    retired.clear();
    for (pid_t pid : pids) EXPECT_FALSE(still_a_child(pid)) << pid << " killed and reaped when dropped";
  }
  std::string dir_;
};

TEST_F(SpareShimTest, ATakenSpareRunsTheRunItWasAssigned) {
  write_spec(dir_, {"sh", "-c", "echo ran in $PWD; exit 4"});
  SpareShim spare(GPUQ_SHIM_FOR_TEST);
  EXPECT_EQ(spare.pid(), 0) << "none before the first refill";
  ASSERT_TRUE(spare.refill());
  pid_t waiting = spare.pid();
  ASSERT_GT(waiting, 0);
  auto ticks = os::process_start_ticks(waiting);
  ASSERT_TRUE(ticks);
  EXPECT_TRUE(spare.refill()) << "one is waiting already: nothing to do";
  EXPECT_EQ(spare.pid(), waiting);

  auto taken = spare.take(dir_);
  ASSERT_TRUE(taken);
  EXPECT_EQ(spare.pid(), 0) << "taken: none waits until the next refill";
  EXPECT_EQ(taken->launched.pid(), waiting);
  EXPECT_EQ(taken->launched.start_ticks(), *ticks);
  EXPECT_FALSE(std::filesystem::exists(exit_record_path(dir_))) << "it waits for its go byte";
  ASSERT_TRUE(taken->launched.release());
  int status = 0;
  ASSERT_EQ(::waitpid(waiting, &status, 0), waiting);
  ::close(taken->pidfd);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 4);
  EXPECT_TRUE(record->released);
  EXPECT_EQ(*os::read_file(log_path(dir_)), "ran in " + dir_ + "\n");
}

TEST_F(SpareShimTest, AnAssignedSpareDroppedBeforeItsGoRunsNothingAndSaysSo) {
  write_spec(dir_, {"sh", "-c", "touch ran"});
  SpareShim spare(GPUQ_SHIM_FOR_TEST);
  ASSERT_TRUE(spare.refill());
  auto taken = spare.take(dir_);
  ASSERT_TRUE(taken);
  pid_t pid = taken->launched.pid();
  { LaunchedShim dropped = std::move(taken->launched); }  // the daemon died before the go
  ::close(taken->pidfd);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ran"));
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_FALSE(record->released);
}

TEST_F(SpareShimTest, AnUnassignedSpareIsReapedWithItsOwner) {
  pid_t pid = 0;
  {
    SpareShim spare(GPUQ_SHIM_FOR_TEST);
    ASSERT_TRUE(spare.refill());
    pid = spare.pid();
    EXPECT_TRUE(still_a_child(pid));
  }
  EXPECT_FALSE(still_a_child(pid)) << "reaped by the destructor";
}

TEST_F(SpareShimTest, ASpareThatDiedWhileItWaitedIsNeverHandedOut) {
  write_spec(dir_, {"true"});
  SpareShim spare(GPUQ_SHIM_FOR_TEST);
  ASSERT_TRUE(spare.refill());
  pid_t pid = spare.pid();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  siginfo_t info{};  // until it has died (a zombie still: reaped once it is dropped)
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(spare.take(dir_));
  EXPECT_EQ(spare.pid(), 0);
  expect_retired(spare, {pid});
  ASSERT_TRUE(spare.refill()) << "a new one takes its place";
  EXPECT_NE(spare.pid(), pid);
}

// Its start time becomes the run's shim's, where the marker sweep after the run begins to look:
// a spare kept too long is replaced, never handed out.
TEST_F(SpareShimTest, ASpareOlderThanItsMaximumAgeIsReplacedNotHandedOut) {
  write_spec(dir_, {"true"});
  // An age is read from start ticks (10 ms apart): a fresh spare can read up to a tick plus its
  // spawn old, so the maximum is well above that, and the old one is kept well beyond it.
  SpareShim spare(GPUQ_SHIM_FOR_TEST, /*max_age_ms=*/300);
  ASSERT_TRUE(spare.refill());
  pid_t old = spare.pid();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_FALSE(spare.take(dir_));
  EXPECT_EQ(spare.pid(), 0);
  EXPECT_TRUE(still_a_child(old)) << "set aside, not reaped by the start";
  expect_retired(spare, {old});
  EXPECT_FALSE(std::filesystem::exists(exit_record_path(dir_))) << "it was never assigned the run";
  ASSERT_TRUE(spare.refill());
  auto fresh = spare.take(dir_);
  ASSERT_TRUE(fresh) << "a fresh one is handed out";
  ::close(fresh->pidfd);
}

// Its owner replaces spares ahead of their maximum age while nothing starts: retire_aging sets
// aside the dead and those within the lead of it, keeps the young ones in their order, and
// ms_until_aging says when the oldest kept one will need it.
TEST_F(SpareShimTest, DeadAndAgingSparesAreSetAsideAheadAndTheYoungKept) {
  SpareShim spare(GPUQ_SHIM_FOR_TEST, SpareShim::kMaxAgeMs, /*capacity=*/3);
  EXPECT_EQ(spare.ms_until_aging(0), std::nullopt) << "none waits";
  ASSERT_TRUE(spare.refill());
  ASSERT_EQ(spare.waiting(), 3u);
  pid_t oldest = spare.pid();
  write_spec(dir_, {"true"});
  auto taken = spare.take(dir_);  // to reach the second, then kill it
  ASSERT_TRUE(taken);
  pid_t dead = spare.pid();
  ASSERT_EQ(::kill(dead, SIGKILL), 0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(dead), &info, WEXITED | WNOWAIT), 0);
  ASSERT_TRUE(spare.refill());  // the third, then a fourth behind it
  ASSERT_EQ(spare.waiting(), 3u);
  { SpareShim::Taken dropped = std::move(*taken); ::close(dropped.pidfd); }
  ASSERT_EQ(::waitpid(oldest, nullptr, 0), oldest) << "the taken one exits unreleased";

  // Young (well under 10 s, less a 2.5 s lead): only the dead one is set aside.
  const int64_t lead = SpareShim::kMaxAgeMs / 4;
  auto until = spare.ms_until_aging(lead);
  ASSERT_TRUE(until);
  EXPECT_GT(*until, 0);
  EXPECT_LE(*until, SpareShim::kMaxAgeMs - lead);
  EXPECT_EQ(spare.young(lead), 2u) << "the dead one is not young";
  EXPECT_EQ(spare.young(SpareShim::kMaxAgeMs + 1), 0u);
  EXPECT_EQ(spare.pid(), dead) << "the oldest waiting";
  spare.retire_aging(lead);
  expect_retired(spare, {dead});
  EXPECT_EQ(spare.waiting(), 2u) << "the young kept";
  pid_t second_oldest = spare.pid();
  EXPECT_GT(second_oldest, 0);

  // A lead past the maximum age makes every spare aging: all are set aside, oldest first.
  EXPECT_EQ(spare.ms_until_aging(SpareShim::kMaxAgeMs + 1), 0);
  spare.retire_aging(SpareShim::kMaxAgeMs + 1);
  EXPECT_EQ(spare.waiting(), 0u);
  std::vector<SpareShim::Started> retired = spare.retired();
  ASSERT_EQ(retired.size(), 2u);
  EXPECT_EQ(retired[0].pid(), second_oldest);
  pid_t youngest = retired[1].pid();
  retired.clear();
  EXPECT_FALSE(still_a_child(second_oldest)) << "killed and reaped when dropped";
  EXPECT_FALSE(still_a_child(youngest)) << "killed and reaped when dropped";
  EXPECT_EQ(spare.ms_until_aging(0), std::nullopt);
}

// A spare someone stopped (SIGSTOP) still goes with its owner: it is killed, not asked to read
// its pipe's end, so the owner's thread cannot hang on it.
TEST_F(SpareShimTest, AStoppedSpareIsKilledAndReapedWithItsOwner) {
  pid_t pid = 0;
  {
    SpareShim spare(GPUQ_SHIM_FOR_TEST);
    ASSERT_TRUE(spare.refill());
    pid = spare.pid();
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    siginfo_t info{};
    ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WSTOPPED | WNOWAIT), 0);
  }
  EXPECT_FALSE(still_a_child(pid)) << "killed and reaped by the destructor";
}

// An owner on an event loop starts its spare on another thread (the spawn waits for the exec)
// and keeps it on its own: the spare it keeps is the one that thread started, and runs its run.
TEST_F(SpareShimTest, ASpareStartedOnAnotherThreadIsKeptAndRunsItsRun) {
  write_spec(dir_, {"sh", "-c", "exit 3"});
  SpareShim spare(GPUQ_SHIM_FOR_TEST);
  std::optional<Result<SpareShim::Started>> started;
  std::thread([&] { started.emplace(SpareShim::start(spare.executable())); }).join();
  ASSERT_TRUE(started.has_value());
  ASSERT_TRUE(*started) << started->error().message;
  pid_t pid = (**started).pid();
  ASSERT_GT(pid, 0);
  EXPECT_EQ(spare.pid(), 0) << "not the owner's until kept";
  spare.keep(std::move(**started));
  EXPECT_EQ(spare.pid(), pid);
  started.reset();  // the moved-from one owns nothing: the kept spare is left alone
  EXPECT_TRUE(still_a_child(pid));
  auto taken = spare.take(dir_);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->launched.pid(), pid);
  ASSERT_TRUE(taken->launched.release());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ::close(taken->pidfd);
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 3);
}

// A spare started for an owner that has one already, or that is gone, is killed and reaped where
// it is dropped: never left running or a zombie.
TEST_F(SpareShimTest, AStartedSpareNotKeptIsKilledAndReaped) {
  SpareShim spare(GPUQ_SHIM_FOR_TEST);
  ASSERT_TRUE(spare.refill());
  pid_t waiting = spare.pid();
  auto second = SpareShim::start(spare.executable());
  ASSERT_TRUE(second) << second.error().message;
  pid_t extra = second->pid();
  ASSERT_NE(extra, waiting);
  spare.keep(std::move(*second));
  EXPECT_EQ(spare.pid(), waiting) << "the one waiting stays";
  second = tl::unexpected(Error{Code::kInternal, "dropped"});  // destroys the moved-from one
  EXPECT_FALSE(still_a_child(extra)) << "the second was killed and reaped by keep()";
  EXPECT_TRUE(still_a_child(waiting));

  pid_t orphan = 0;
  {
    auto started = SpareShim::start(spare.executable());
    ASSERT_TRUE(started);
    orphan = started->pid();
    ASSERT_TRUE(still_a_child(orphan));
  }
  EXPECT_FALSE(still_a_child(orphan)) << "dropped on its way: killed and reaped";
}

// A pool of three: refill starts three, take() hands them out oldest first, skipping (and
// reaping) one that died while it waited, and one more than the pool holds is not kept.
TEST_F(SpareShimTest, APoolHandsOutItsSparesOldestFirstAndSkipsTheDead) {
  SpareShim spare(GPUQ_SHIM_FOR_TEST, SpareShim::kMaxAgeMs, /*capacity=*/3);
  ASSERT_TRUE(spare.refill());
  ASSERT_EQ(spare.waiting(), 3u);
  std::vector<pid_t> pids;
  std::vector<std::string> dirs;
  for (int i = 0; i < 3; ++i) {
    dirs.push_back(dir_ + "/run-" + std::to_string(i));
    std::filesystem::create_directories(dirs.back());
    write_spec(dirs.back(), {"true"});
  }
  auto first = spare.take(dirs[0]);
  ASSERT_TRUE(first);
  pids.push_back(first->launched.pid());
  pid_t second_oldest = spare.pid();
  ASSERT_GT(second_oldest, 0);
  ASSERT_EQ(::kill(second_oldest, SIGKILL), 0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(second_oldest), &info, WEXITED | WNOWAIT), 0);
  auto next = spare.take(dirs[1]);
  ASSERT_TRUE(next) << "the dead one is skipped, the third handed out";
  EXPECT_NE(next->launched.pid(), second_oldest);
  expect_retired(spare, {second_oldest});
  EXPECT_EQ(spare.waiting(), 0u);
  EXPECT_FALSE(spare.take(dirs[2])) << "none left";

  ASSERT_TRUE(spare.refill());
  auto extra = SpareShim::start(spare.executable());
  ASSERT_TRUE(extra);
  pid_t extra_pid = extra->pid();
  spare.keep(std::move(*extra));
  EXPECT_EQ(spare.waiting(), 3u) << "full: the fourth is not kept";
  EXPECT_FALSE(still_a_child(extra_pid)) << "killed and reaped";
  for (auto* taken : {&*first, &*next}) {
    pid_t pid = taken->launched.pid();
    ASSERT_TRUE(taken->launched.release());
    ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
    ::close(taken->pidfd);
  }
  EXPECT_TRUE(read_exit_record(dirs[0]));
  EXPECT_TRUE(read_exit_record(dirs[1]));
  EXPECT_FALSE(std::filesystem::exists(exit_record_path(dirs[2])));
}

// A run directory too long to be sent to a spare is not tried on each of them: none is handed
// out (the caller's own shim gets it on its command line) and the spares stay waiting.
TEST_F(SpareShimTest, ARunDirectoryTooLongForASpareLeavesThePoolAlone) {
  SpareShim spare(GPUQ_SHIM_FOR_TEST, SpareShim::kMaxAgeMs, /*capacity=*/2);
  ASSERT_TRUE(spare.refill());
  pid_t oldest = spare.pid();
  EXPECT_FALSE(spare.take(std::string(kMaxAssignedRunDir + 1, 'a')));
  EXPECT_EQ(spare.waiting(), 2u);
  EXPECT_EQ(spare.pid(), oldest);
  EXPECT_TRUE(spare.retired().empty());
}

TEST_F(SpareShimTest, ARunDirectoryThatCannotBeSentIsRefused) {
  auto launched = launch_spare_shim(GPUQ_SHIM_FOR_TEST);
  ASSERT_TRUE(launched);
  auto refused = launched->assign(std::string(kMaxAssignedRunDir + 1, 'a'));
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_FALSE(launched->assign(""));
  pid_t pid = launched->pid();
  { LaunchedShim dropped = std::move(*launched); }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "never assigned: it exits quietly";
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace gpuq::runner
