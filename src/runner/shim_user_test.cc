// SPDX-License-Identifier: Apache-2.0
// The shim of a run of another user (RunSpec::run_as), with real users: the job's ids, groups,
// environment and capabilities, the ownership of its files, and the links and replaced files a
// user could leave in the directories that are now theirs. Skipped unless run as root.
#include <fcntl.h>
#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "os/process.h"
#include "os/testing/test_users.h"
#include "runner/launcher.h"
#include "runner/run_files.h"

namespace gpuq::runner {
namespace {

namespace fs = std::filesystem;

using os::testing::owner_of;

class ShimUserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = os::testing::TestUsers::unavailable(); !why.empty()) GTEST_SKIP() << why;
    ann_ = users_.add("ann");
    bob_ = users_.add("bob");
    ASSERT_FALSE(ann_.login.empty() || bob_.login.empty()) << "useradd failed";
    char tmpl[] = "/tmp/gpuq-shim-user-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    ::chmod(root_.c_str(), 0711);  // users may pass through to their own directories
    fs::create_directory(root_ + "/jobs");
    ::chmod((root_ + "/jobs").c_str(), 0711);
    std::ofstream(root_ + "/sentinel") << "root's";
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  // JOBS/ID/run-1 as the daemon makes it: the job directory the user's, the run directory root's
  // with run.json in it.
  std::string make_run(int id, const os::UserIdentity& who, std::vector<std::string> argv) {
    std::string job_dir = fmt::format("{}/jobs/{}", root_, id);
    fs::create_directory(job_dir);
    ::chmod(job_dir.c_str(), 0700);
    EXPECT_EQ(::chown(job_dir.c_str(), who.uid, who.gid), 0);
    std::string run_dir = job_dir + "/run-1";
    EXPECT_EQ(::mkdir(run_dir.c_str(), 0700), 0);
    RunSpec spec;
    spec.argv = std::move(argv);
    spec.env = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/root"}, {"USER", "root"}, {"RUN_DIR", run_dir}};
    spec.cwd = "/";
    spec.kill_grace_ms = 500;
    spec.run_as = who;
    EXPECT_TRUE(write_run_spec(run_dir, spec));
    return run_dir;
  }
  // Starts the shim and lets it go. A shim that refused its run directory has exited and
  // closed its go pipe already: the go byte then finds no reader (EPIPE, with SIGPIPE ignored
  // here as the daemon ignores it), and what the shim did is the test's to check.
  static LaunchedShim start(const std::string& run_dir) {
    ::signal(SIGPIPE, SIG_IGN);
    auto shim = launch_shim(GPUQ_SHIM_FOR_TEST, run_dir);
    EXPECT_TRUE(shim) << shim.error().message;
    (void)shim->release();
    return std::move(*shim);
  }
  static void finish(const std::string& run_dir) {
    auto shim = start(run_dir);
    ::waitpid(shim.pid(), nullptr, 0);
  }
  std::string sentinel() const { return *os::read_file(root_ + "/sentinel"); }

  os::testing::TestUsers users_;
  os::UserIdentity ann_, bob_;
  std::string root_;
};

TEST_F(ShimUserTest, TheJobRunsAsItsUserWithTheirEnvironmentAndNoCapability) {
  std::string run_dir = make_run(1, ann_, {"sh", "-c",
      "id -u; id -g; id -G; echo \"$HOME $USER $LOGNAME $SHELL\"; "
      "grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status; touch \"$RUN_DIR/made-by-job\""});
  finish(run_dir);
  auto record = read_exit_record(run_dir);
  ASSERT_TRUE(record) << record.error().message;
  auto log = *os::read_file(log_path(run_dir));
  ASSERT_EQ(record->exit_code, 0) << log << record->error;
  std::string groups;
  for (gid_t g : ann_.groups) groups += (groups.empty() ? "" : " ") + std::to_string(g);
  EXPECT_EQ(log.substr(0, log.find("Cap")),
            fmt::format("{}\n{}\n{}\n{} {} {} {}\n", ann_.uid, ann_.gid, groups, ann_.home, ann_.login,
                        ann_.login, ann_.shell));
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"}) {
    EXPECT_NE(log.find(std::string(set) + ":\t0000000000000000"), std::string::npos) << set << "\n" << log;
  }
  // The run directory and the log are the user's; the records the shim writes stay root's.
  EXPECT_EQ(owner_of(run_dir).uid, ann_.uid);
  EXPECT_EQ(owner_of(run_dir).mode, 0700u);
  EXPECT_EQ(owner_of(log_path(run_dir)).uid, ann_.uid);
  EXPECT_EQ(owner_of(log_path(run_dir)).mode, 0600u);
  EXPECT_EQ(owner_of(run_dir + "/made-by-job").uid, ann_.uid);
  EXPECT_EQ(owner_of(exit_record_path(run_dir)).uid, 0u);
  EXPECT_EQ(owner_of(run_spec_path(run_dir)).uid, 0u);
}

// A run of another user is forked, not posix_spawn'd: a signal ignored by whoever started the
// daemon (nohup's SIGHUP) and the shim's own SIGPIPE must not stay ignored in the job there
// either.
TEST_F(ShimUserTest, TheJobOfAnotherUserStartsWithNoSignalIgnored) {
  std::string run_dir = make_run(11, ann_, {"grep", "SigIgn", "/proc/self/status"});
  struct sigaction ignore{}, before{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGHUP, &ignore, &before);  // inherited by the shim this test launches
  auto shim = start(run_dir);
  ::sigaction(SIGHUP, &before, nullptr);
  ::waitpid(shim.pid(), nullptr, 0);
  auto record = read_exit_record(run_dir);
  ASSERT_TRUE(record) << record.error().message;
  auto line = *os::read_file(log_path(run_dir));
  ASSERT_EQ(record->exit_code, 0) << line << record->error;
  ASSERT_EQ(line.rfind("SigIgn:\t", 0), 0u) << line;
  // Only glibc's two internal signals (32, 33) may be, as in ShimTest's run of the daemon's user.
  uint64_t ignored = std::stoull(line.substr(8), nullptr, 16);
  EXPECT_EQ(ignored & ~((uint64_t{1} << 31) | (uint64_t{1} << 32)), 0u) << line;
}

TEST_F(ShimUserTest, ARunSpecTheUserReplacedIsRefusedAndNothingRuns) {
  std::string run_dir = make_run(2, ann_, {"true"});
  ASSERT_EQ(::chown(run_dir.c_str(), ann_.uid, ann_.gid), 0);  // as a started run's is
  fs::remove(run_spec_path(run_dir));
  std::ofstream(run_spec_path(run_dir)) << fmt::format(
      R"({{"argv":["sh","-c","echo pwned > {}/sentinel"],"env":{{}},"cwd":"/","kill_grace_ms":1}})", root_);
  ASSERT_EQ(::chown(run_spec_path(run_dir).c_str(), ann_.uid, ann_.gid), 0);
  finish(run_dir);
  EXPECT_EQ(sentinel(), "root's");
  auto record = read_exit_record(run_dir);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 127);
  EXPECT_NE(record->error.find("owned by"), std::string::npos) << record->error;
}

TEST_F(ShimUserTest, ALinkPlantedAsTheLogIsNotFollowed) {
  std::string run_dir = make_run(3, ann_, {"sh", "-c", "echo pwned"});
  // A run directory that is the user's already: the shim refuses it rather than open a log there.
  ASSERT_EQ(::chown(run_dir.c_str(), ann_.uid, ann_.gid), 0);
  fs::create_symlink(root_ + "/sentinel", log_path(run_dir));
  finish(run_dir);
  EXPECT_EQ(sentinel(), "root's");
  EXPECT_EQ(owner_of(root_ + "/sentinel").uid, 0u);
}

TEST_F(ShimUserTest, LinksTheJobLeavesForTheRecordsAreNotFollowed) {
  std::string run_dir = make_run(4, ann_, {"sh", "-c", fmt::format(
      "cd \"$RUN_DIR\" && ln -s {0}/sentinel exit.json && ln -s {0}/sentinel exit.json.tmp && "
      "ln -s {0}/sentinel steps.json.tmp", root_)});
  finish(run_dir);
  EXPECT_EQ(sentinel(), "root's");
  EXPECT_FALSE(fs::is_symlink(exit_record_path(run_dir)));
  auto record = read_exit_record(run_dir);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 0);
}

TEST_F(ShimUserTest, ARunDirectorySwappedForALinkSendsTheRecordsNowhereElse) {
  fs::create_directory(root_ + "/elsewhere");
  std::string run_dir = make_run(5, ann_, {"sh", "-c", fmt::format(
      "mv \"$RUN_DIR\" \"$RUN_DIR.moved\" && ln -s {}/elsewhere \"$RUN_DIR\"", root_)});
  finish(run_dir);
  EXPECT_FALSE(fs::exists(root_ + "/elsewhere/exit.json"));
  EXPECT_TRUE(fs::exists(run_dir + ".moved/exit.json"));
  // And the daemon, reading by path, does not follow the link either.
  auto record = read_exit_record(run_dir);
  ASSERT_FALSE(record);
  EXPECT_EQ(record.error().code, Code::kPermissionDenied) << record.error().message;
}

TEST_F(ShimUserTest, ARecordTheUserPlantedIsNotTrustedAndAFifoNeverBlocks) {
  std::string run_dir = make_run(6, ann_, {"sh", "-c",
      "cd \"$RUN_DIR\" && echo '{\"steps\":[]}' > steps.json.mine && mv steps.json.mine steps.json"});
  finish(run_dir);
  auto steps = read_step_record(run_dir);
  ASSERT_FALSE(steps);  // ann's file, not the shim's
  EXPECT_EQ(steps.error().code, Code::kPermissionDenied);
  fs::remove(steps_path(run_dir));
  ASSERT_EQ(::mkfifo(steps_path(run_dir).c_str(), 0600), 0);
  EXPECT_FALSE(read_step_record(run_dir));
}

TEST_F(ShimUserTest, AJobCannotSignalOrReadAnotherUsersJob) {
  std::string ann_run = make_run(7, ann_, {"sh", "-c", "echo ann-secret; exec sleep 30"});
  auto ann_shim = start(ann_run);
  pid_t ann_job = 0;
  for (int i = 0; i < 200 && ann_job == 0; ++i) {
    auto pids = os::processes_in_session(ann_shim.pid());
    for (pid_t pid : pids) {
      if (pid != ann_shim.pid()) ann_job = pid;
    }
    if (ann_job == 0) ::usleep(10'000);
  }
  ASSERT_NE(ann_job, 0);
  std::string bob_run = make_run(8, bob_, {"sh", "-c", fmt::format(
      "kill -0 {} 2>&1 && echo signalled; cat {} 2>&1 || echo unreadable", ann_job, log_path(ann_run))});
  finish(bob_run);
  auto bob_log = *os::read_file(log_path(bob_run));
  EXPECT_EQ(bob_log.find("signalled"), std::string::npos) << bob_log;
  EXPECT_NE(bob_log.find("Operation not permitted"), std::string::npos) << bob_log;
  EXPECT_EQ(bob_log.find("ann-secret"), std::string::npos) << bob_log;
  EXPECT_NE(bob_log.find("unreadable"), std::string::npos) << bob_log;
  ::kill(ann_shim.pid(), SIGTERM);
  ::waitpid(ann_shim.pid(), nullptr, 0);
}

// A container step of a root daemon's run: the runtime (here a script that reports what it
// got) runs as root with the shim's own environment, nothing of the job's, and reads the job's
// variables from the env file on fd 3; the job's own steps still run as the user.
TEST_F(ShimUserTest, ARootRuntimeGetsTheJobsVariablesOnlyThroughItsEnvFile) {
  std::string runtime = root_ + "/runtime";
  std::ofstream(runtime) << "#!/bin/sh\necho \"runtime uid $(id -u)\"\n"
                            "env | grep -E '^(SECRET|LD_PRELOAD|GPUQ_STEP_INDEX)=' | sed 's/^/runtime env /'\n"
                            "sed 's/^/env file /' /dev/fd/3\n";
  ::chmod(runtime.c_str(), 0755);
  std::string run_dir = make_run(9, ann_, {"true"});
  auto spec = read_run_spec(run_dir);
  ASSERT_TRUE(spec) << spec.error().message;
  spec->argv.clear();
  spec->steps = {StepSpec{"host", {"sh", "-c", "echo \"host step uid $(id -u)\""}, 0, ""},
                 StepSpec{"contained", {runtime}, 0, ""}};
  spec->env["SECRET"] = "s3cret";
  spec->env["LD_PRELOAD"] = "/nonexistent/preload.so";
  spec->root_runtime = RunSpec::RootRuntime{{1}, {"GPUQ_STEP_INDEX", "SECRET", "USER"}};
  fs::remove(run_spec_path(run_dir));
  ASSERT_TRUE(write_run_spec(run_dir, *spec));
  finish(run_dir);
  auto log = *os::read_file(log_path(run_dir));
  auto record = read_exit_record(run_dir);
  ASSERT_TRUE(record) << record.error().message;
  EXPECT_EQ(record->exit_code, 0) << log;
  // The job's own step runs as Ann with the job's LD_PRELOAD (ld.so complains of it, as the
  // job asked); the root runtime gets none of it.
  ASSERT_NE(log.find("host step uid"), std::string::npos) << log;
  EXPECT_EQ(log.substr(log.find("host step uid")),
            fmt::format("host step uid {}\nruntime uid 0\nenv file GPUQ_STEP_INDEX=1\n"
                        "env file SECRET=s3cret\nenv file USER={}\n",
                        ann_.uid, ann_.login));
}

TEST_F(ShimUserTest, AVariableWithALineBreakFailsARootRuntimesStepSayingWhy) {
  std::string run_dir = make_run(10, ann_, {"/bin/true"});
  auto spec = read_run_spec(run_dir);
  ASSERT_TRUE(spec);
  spec->env["TWO_LINES"] = "one\ntwo";
  spec->root_runtime = RunSpec::RootRuntime{{0}, {"TWO_LINES"}};
  fs::remove(run_spec_path(run_dir));
  ASSERT_TRUE(write_run_spec(run_dir, *spec));
  finish(run_dir);
  auto record = read_exit_record(run_dir);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->exit_code, 127);
  EXPECT_NE(os::read_file(log_path(run_dir))->find("the variable TWO_LINES holds a line break"), std::string::npos)
      << *os::read_file(log_path(run_dir));
}

}  // namespace
}  // namespace gpuq::runner
