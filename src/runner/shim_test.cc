// SPDX-License-Identifier: Apache-2.0
// Real processes: the shim runs real jobs and must leave nothing behind.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cstring>

#include "model/claim_deadline.h"
#include "os/boot_clock.h"
#include "os/process.h"
#include "runner/launcher.h"
#include "runner/log_cap.h"
#include "runner/run_files.h"

namespace gpuq::runner {
namespace {

class ShimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("gpuq-shim-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  LaunchedShim start(std::vector<std::string> argv, int64_t grace_ms = 2000, int64_t max_log = 0) {
    RunSpec spec;
    spec.argv = std::move(argv);
    spec.env = {{"PATH", "/usr/bin:/bin"}};
    spec.cwd = dir_;
    spec.kill_grace_ms = grace_ms;
    spec.max_log_bytes = max_log;
    spec.umask = job_umask_;
    spec.claim_deadline_file = claim_deadline_file_;
    EXPECT_TRUE(write_run_spec(dir_, spec));
    auto shim = launch_shim(GPUQ_SHIM_FOR_TEST, dir_);
    EXPECT_TRUE(shim) << shim.error().message;
    return std::move(*shim);
  }
  static int wait_exit(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  }
  std::string dir_;
  mode_t job_umask_ = 022;
  std::string claim_deadline_file_;  // RunSpec::claim_deadline_file of the runs start() makes
};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST_F(ShimTest, RecordsTheTrueExitCodeAndLog) {
  auto shim = start({"sh", "-c", "echo out; echo err >&2; exit 3"});
  ASSERT_TRUE(shim.release());
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 3);
  EXPECT_FALSE(record->signal);
  EXPECT_EQ(*os::read_file(log_path(dir_)), "out\nerr\n");
  EXPECT_GE(record->ended_at_ms, record->started_at_ms);
}

TEST_F(ShimTest, KillsBackgroundChildrenLeftInTheGroup) {
  auto shim = start({"sh", "-c", "sleep 300 & echo $! > child.pid; exit 0"});
  ASSERT_TRUE(shim.release());
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->exit_code, 0);
  EXPECT_GE(record->leftovers_killed, 1);
  pid_t child = std::stoi(*os::read_file(dir_ + "/child.pid"));
  EXPECT_NE(kill(child, 0), 0) << "the background sleep survived its job";
}

TEST_F(ShimTest, StopRequestTerminatesTheRun) {
  auto shim = start({"sh", "-c", "touch ready; exec sleep 300"});
  ASSERT_TRUE(shim.release());
  // Wait until the job has started, then ask the shim to stop.
  for (int i = 0; i < 500 && !std::filesystem::exists(dir_ + "/ready"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(shim.pid(), SIGTERM);
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record);
  EXPECT_TRUE(record->stop_requested);
  EXPECT_EQ(record->signal, SIGTERM);
  EXPECT_FALSE(record->exit_code);
}

TEST_F(ShimTest, AStopAfterTheJobExitedKeepsItsOwnStatus) {
  // The job exits 0 but leaves a child that ignores SIGTERM, so the shim is still emptying the
  // group when the stop arrives: the exit came first and must stay a natural one.
  auto shim = start({"sh", "-c", "(trap '' TERM; exec sleep 300) & touch ready; exit 0"}, 1000);
  ASSERT_TRUE(shim.release());
  for (int i = 0; i < 500 && !std::filesystem::exists(dir_ + "/ready"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  kill(shim.pid(), SIGTERM);
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record);
  EXPECT_FALSE(record->stop_requested);
  EXPECT_EQ(record->exit_code, 0);
  EXPECT_GE(record->leftovers_killed, 1);
}

TEST_F(ShimTest, EscalatesToSigkillAfterTheGrace) {
  auto shim = start({"sh", "-c", "trap '' TERM; echo ready > ready; while :; do sleep 0.05; done"},
                    200);
  ASSERT_TRUE(shim.release());
  for (int i = 0; i < 500 && !std::filesystem::exists(dir_ + "/ready"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(shim.pid(), SIGTERM);
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->signal, SIGKILL);
}

TEST_F(ShimTest, WithoutReleaseNothingRuns) {
  pid_t pid = 0;
  {
    auto shim = start({"sh", "-c", "touch ran"});
    pid = shim.pid();
  }  // destroyed without release(): the daemon died, or never recorded the run
  wait_exit(pid);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ran"));
  EXPECT_FALSE(std::filesystem::exists(log_path(dir_)));
  // It says so, for a daemon that recorded the start and died before letting it go.
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_FALSE(record->released);
  EXPECT_FALSE(record->exit_code);
  EXPECT_EQ(record->job_pid, 0);
}

// The shim resets only the dispositions an exec keeps (ignored ones) and its own SIGPIPE: a
// signal ignored by whoever started the daemon (nohup's SIGHUP) must not stay ignored in the job.
TEST_F(ShimTest, TheJobStartsWithNoSignalIgnored) {
  struct sigaction ignore{}, before{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGHUP, &ignore, &before);  // inherited by the shim this test launches
  auto shim = start({"grep", "SigIgn", "/proc/self/status"});
  ::sigaction(SIGHUP, &before, nullptr);
  ASSERT_TRUE(shim.release());
  wait_exit(shim.pid());
  auto line = *os::read_file(log_path(dir_));
  ASSERT_EQ(line.rfind("SigIgn:\t", 0), 0u) << line;
  // glibc's posix_spawn leaves its two internal signals (32, 33) ignored in every job, whatever
  // the attributes ask: not ours to change. No other signal may be.
  uint64_t ignored = std::stoull(line.substr(8), nullptr, 16);
  EXPECT_EQ(ignored & ~((uint64_t{1} << 31) | (uint64_t{1} << 32)), 0u) << line;
}

TEST_F(ShimTest, AMissingProgramIsExit127WithAMessage) {
  auto shim = start({"no-such-program-gpuq"});
  ASSERT_TRUE(shim.release());
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->exit_code, 127);
  EXPECT_NE(os::read_file(log_path(dir_))->find("cannot run no-such-program-gpuq"),
            std::string::npos);
}

TEST_F(ShimTest, ALogPastItsCapIsCutThereWithANotice) {
  auto shim = start({"sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; echo; echo tail-line"},
                    2000, /*max_log=*/1000);
  ASSERT_TRUE(shim.release());
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 0);
  EXPECT_GE(record->log_dropped_bytes, 199'000);
  auto log = os::read_file(log_path(dir_));
  ASSERT_TRUE(log);
  std::string notice = LogCap::notice(1000);
  EXPECT_EQ(log->size(), 1000 + notice.size());
  EXPECT_EQ(log->substr(0, 1000), std::string(1000, 'x'));
  EXPECT_EQ(log->substr(1000), notice);
  EXPECT_FALSE(record->disk_full);
}

TEST_F(ShimTest, ALogUnderItsCapIsLeftWhole) {
  auto shim = start({"sh", "-c", "echo small"}, 2000, /*max_log=*/1000);
  ASSERT_TRUE(shim.release());
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->log_dropped_bytes, 0);
  EXPECT_EQ(*os::read_file(log_path(dir_)), "small\n");
}

// A run directory on a tiny tmpfs (mounting one needs root; skipped elsewhere).
class ShimOnFullDisk : public ShimTest {
 protected:
  void SetUp() override {
    ShimTest::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, "size=512k") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    ShimTest::TearDown();
  }
  // Fills the file system with one file; returns its path.
  std::string fill() {
    std::string path = dir_ + "/filler";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    std::string block(4096, 'f');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    ::close(fd);
    return path;
  }
  bool mounted_ = false;
};

TEST_F(ShimOnFullDisk, TheExitRecordWaitsForSpaceAndIsNeverLost) {
  auto shim = start({"sh", "-c", "echo $$ > job.pid; while [ ! -e go ]; do sleep 0.01; done; exit 0"});
  ASSERT_TRUE(shim.release());
  pid_t job = 0;
  for (int i = 0; i < 3000 && job == 0; ++i) {
    auto text = os::read_file(dir_ + "/job.pid");
    if (text && !text->empty()) job = std::atoi(text->c_str());
    if (job == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(job, 0);
  std::string filler = fill();
  ASSERT_EQ(::mknod((dir_ + "/go").c_str(), S_IFREG | 0600, 0), 0);  // an inode, no block
  while (::kill(job, 0) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // The job has ended and the disk is full: the shim cannot have written its record, and it
  // must still be there, trying.
  EXPECT_EQ(::waitpid(shim.pid(), nullptr, WNOHANG), 0) << "the shim gave up";
  EXPECT_FALSE(read_exit_record(dir_));
  ASSERT_EQ(::unlink(filler.c_str()), 0);
  int status = wait_exit(shim.pid());
  EXPECT_TRUE(WIFEXITED(status));
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 0);
  EXPECT_TRUE(record->disk_full) << "the log may lack output, and the record says so";
}

// The shim runs under the daemon's umask 077, so its own files are private; the job gets the
// umask its RunSpec carries, so what it writes is as its user expects.
// run.json carries the job's user's groups, which the daemon looks up: the shim (a static
// binary) looks up no user.
TEST_F(ShimTest, ARunSpecKeepsTheUsersGroups) {
  RunSpec spec;
  spec.argv = {"true"};
  spec.cwd = dir_;
  spec.run_as = os::UserIdentity{4242, 4243, {4243, 27, 100}, "ann", "/home/ann", "/bin/bash"};
  ASSERT_TRUE(write_run_spec(dir_, spec));
  auto read = read_run_spec(dir_);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->run_as);
  EXPECT_EQ(read->run_as->groups, (std::vector<gid_t>{4243, 27, 100}));
  EXPECT_EQ(read->run_as->gid, 4243u);
  EXPECT_EQ(read->run_as->login, "ann");
}

// A run.json that names a user but no groups (not the daemon's: it always writes them) runs
// nothing: the shim does not look the user up in its place, and its exit record says why.
TEST_F(ShimTest, ARunOfAUserWithoutGroupsRunsNothingAndSaysWhy) {
  RunSpec spec;
  spec.argv = {"touch", dir_ + "/ran"};
  spec.env = {{"PATH", "/usr/bin:/bin"}};
  spec.cwd = dir_;
  spec.run_as = os::UserIdentity{4242, 4243, {}, "ann", "/home/ann", "/bin/sh"};
  ASSERT_TRUE(write_run_spec(dir_, spec));
  auto shim = launch_shim(GPUQ_SHIM_FOR_TEST, dir_);
  ASSERT_TRUE(shim) << shim.error().message;
  ::signal(SIGPIPE, SIG_IGN);  // the shim may have exited already: the go byte finds no reader
  (void)shim->release();
  wait_exit(shim->pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 127);
  EXPECT_NE(record->error.find("run.json names no groups for the job's user ann"), std::string::npos)
      << record->error;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ran"));
}

TEST(ShimBinaryBeside, IsTheExecutableGpuqShimInTheFullBinarysDirectory) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("gpuq-shim-beside-" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  EXPECT_EQ(shim_binary_beside(dir + "/gpuqd"), "");  // none there
  { std::ofstream(dir + "/gpuq-shim") << "#!/bin/sh\n"; }
  ::chmod((dir + "/gpuq-shim").c_str(), 0644);
  EXPECT_EQ(shim_binary_beside(dir + "/gpuqd"), "");  // there, but it may not be run
  ::chmod((dir + "/gpuq-shim").c_str(), 0755);
  EXPECT_EQ(shim_binary_beside(dir + "/gpuqd"), dir + "/gpuq-shim");
  std::filesystem::remove_all(dir);
}

TEST_F(ShimTest, TheJobGetsItsOwnUmaskAndTheRunFilesStayPrivate) {
  job_umask_ = 027;
  mode_t before = ::umask(077);  // inherited by the shim, as from the daemon
  auto shim = start({"sh", "-c", "umask; echo data > made"});
  ::umask(before);
  ASSERT_TRUE(shim.release());
  wait_exit(shim.pid());
  ASSERT_TRUE(read_exit_record(dir_));
  EXPECT_EQ(*os::read_file(log_path(dir_)), "0027\n");
  EXPECT_EQ(mode_of(dir_ + "/made"), 0640u);
  EXPECT_EQ(mode_of(log_path(dir_)), 0600u);
  EXPECT_EQ(mode_of(exit_record_path(dir_)), 0600u);
  EXPECT_EQ(mode_of(run_spec_path(dir_)), 0600u);
}

TEST_F(ShimTest, ARunSpecWithoutAUmaskMeans022) {
  RunSpec spec;
  spec.argv = {"true"};
  spec.cwd = dir_;
  spec.umask = 027;
  ASSERT_TRUE(write_run_spec(dir_, spec));
  auto read = read_run_spec(dir_);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->umask, 027u);
  // An older daemon's run.json has no umask.
  ASSERT_TRUE(os::write_file_atomic(run_spec_path(dir_),
                                    R"({"argv":["true"],"env":{},"cwd":"/","kill_grace_ms":1})"));
  read = read_run_spec(dir_);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->umask, 022u);
  ASSERT_TRUE(os::write_file_atomic(
      run_spec_path(dir_), R"({"argv":["true"],"env":{},"cwd":"/","kill_grace_ms":1,"umask":512})"));
  read = read_run_spec(dir_);
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().code, Code::kCorruption);
  EXPECT_NE(read.error().message.find("umask 512"), std::string::npos) << read.error().message;
}

// A fleet run's claim deadline (ClaimWatch): the deadline file as the fleet agent writes it, in
// a directory of its own (the run directory is the job's).
class ShimClaimTest : public ShimTest {
 protected:
  void SetUp() override {
    ShimTest::SetUp();
    claim_deadline_file_ = dir_ + "-claim.deadline";
  }
  void TearDown() override {
    std::filesystem::remove(claim_deadline_file_);
    ShimTest::TearDown();
  }
  // A deadline `stop_in_ms` from now, SIGKILL by `kill_in_ms` from now.
  void write_deadline(int64_t stop_in_ms, int64_t kill_in_ms) const {
    int64_t now = os::boot_clock_ms();
    ASSERT_TRUE(os::write_file_atomic(claim_deadline_file_,
                                      encode_claim_deadline({now + stop_in_ms, now + kill_in_ms}), false));
  }
  // Renews the claim as the agent does, every 100 ms (a lease/6 of 600 ms), until `done`; the
  // deadline is a second ahead, so that a busy machine does not make it lapse meanwhile.
  template <class Done>
  void renew_until(Done done, int64_t kill_in_ms = 1500) const {
    while (!done()) {
      write_deadline(1000, kill_in_ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  bool ready() const { return std::filesystem::exists(dir_ + "/ready"); }
  // Runs a job that would leave a file behind, and says it did not begin: the exit record.
  ExitRecord run_expecting_no_start() {
    auto shim = start({"sh", "-c", "touch ran"});
    EXPECT_TRUE(shim.release());
    wait_exit(shim.pid());
    EXPECT_FALSE(std::filesystem::exists(dir_ + "/ran")) << "the job began";
    auto record = read_exit_record(dir_);
    EXPECT_TRUE(record) << record.error().message;
    EXPECT_FALSE(record->exit_code);
    EXPECT_EQ(record->job_pid, 0);
    return record.value_or(ExitRecord{});
  }
};

TEST_F(ShimClaimTest, ARunWhoseClaimLapsesGetsSigtermThenSigkillAfterTheGrace) {
  write_deadline(1000, 600'000);
  auto shim = start({"sh", "-c", "trap 'echo term' TERM; touch ready; while :; do sleep 0.05; done"}, 300);
  ASSERT_TRUE(shim.release());
  // Renewed until the job has set its trap, then no more: the agent is gone.
  renew_until([&] { return ready(); }, 600'000);
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->signal, SIGKILL) << "the job ignored SIGTERM: the grace ends with SIGKILL";
  std::string log = *os::read_file(log_path(dir_));
  EXPECT_TRUE(log.ends_with("term\n")) << "the job's trap never saw SIGTERM: " << log;
  EXPECT_NE(record->claim_lapsed.find("its fleet claim was not renewed by "), std::string::npos)
      << record->claim_lapsed;
  EXPECT_FALSE(record->stop_requested) << "nobody asked: the shim stopped it by itself";
}

TEST_F(ShimClaimTest, TheKillByTimeCutsALongGraceShort) {
  constexpr int64_t kGraceMs = 600'000;
  write_deadline(1000, 1500);
  auto shim = start({"sh", "-c", "trap '' TERM; touch ready; while :; do sleep 0.05; done"}, kGraceMs);
  ASSERT_TRUE(shim.release());
  renew_until([&] { return ready(); }, 1500);
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->signal, SIGKILL);
  EXPECT_FALSE(record->claim_lapsed.empty());
  EXPECT_LT(record->ended_at_ms - record->started_at_ms, kGraceMs) << "it waited for the whole grace";
}

TEST_F(ShimClaimTest, ARunWhoseClaimKeepsBeingRenewedRunsToItsEnd) {
  write_deadline(1000, 1500);
  int64_t first_stop_at = os::boot_clock_ms() + 1000;
  auto shim = start({"sh", "-c", "touch ready; while [ ! -e finish ]; do sleep 0.02; done; exit 0"});
  ASSERT_TRUE(shim.release());
  // Renewed until well past the first deadline, then the job is let finish, still renewed.
  renew_until([&] { return ready() && os::boot_clock_ms() > first_stop_at + 1000; });
  ASSERT_EQ(::waitpid(shim.pid(), nullptr, WNOHANG), 0) << "the run ended although its claim was renewed";
  std::ofstream(dir_ + "/finish").put('\n');
  renew_until([&] { return std::filesystem::exists(exit_record_path(dir_)); });
  wait_exit(shim.pid());
  auto record = read_exit_record(dir_);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 0);
  EXPECT_FALSE(record->signal);
  EXPECT_EQ(record->claim_lapsed, "");
}

TEST_F(ShimClaimTest, AClaimLapsedBeforeTheGoNeverStartsTheJob) {
  write_deadline(-1000, -500);
  ExitRecord record = run_expecting_no_start();
  EXPECT_NE(record.claim_lapsed.find("not renewed by"), std::string::npos) << record.claim_lapsed;
}

TEST_F(ShimClaimTest, AnUnreadableDeadlineFileNeverStartsTheJob) {
  // No file written: the agent writes it before it submits the job, so none means no claim.
  ExitRecord record = run_expecting_no_start();
  EXPECT_NE(record.claim_lapsed.find("could not be read from " + claim_deadline_file_), std::string::npos)
      << record.claim_lapsed;
}

TEST_F(ShimClaimTest, ARunSpecAndExitRecordKeepTheClaimFields) {
  RunSpec spec;
  spec.argv = {"true"};
  spec.cwd = dir_;
  spec.claim_deadline_file = claim_deadline_file_;
  ASSERT_TRUE(write_run_spec(dir_, spec));
  EXPECT_EQ(read_run_spec(dir_)->claim_deadline_file, claim_deadline_file_);
  ExitRecord record;
  record.claim_lapsed = "its fleet claim was not renewed by then";
  ASSERT_TRUE(write_exit_record(dir_, record));
  EXPECT_EQ(read_exit_record(dir_)->claim_lapsed, record.claim_lapsed);
  // Local runs, and an older daemon's files, have neither.
  spec.claim_deadline_file.clear();
  ::unlink(run_spec_path(dir_).c_str());  // run.json is only ever written once, into a new directory
  ASSERT_TRUE(write_run_spec(dir_, spec));
  EXPECT_EQ(read_run_spec(dir_)->claim_deadline_file, "");
  ASSERT_TRUE(write_exit_record(dir_, ExitRecord{}));
  EXPECT_EQ(read_exit_record(dir_)->claim_lapsed, "");
}

}  // namespace
}  // namespace gpuq::runner
