// SPDX-License-Identifier: Apache-2.0
// The real World of a root daemon whose jobs run as their submitters, with real users: who a job
// runs as, the directories the daemon makes for it and gives away, the yield file it writes in
// them, and REQUIRES tests run as the user. Skipped unless run as root.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/real_world.h"
#include "os/process.h"
#include "os/testing/test_users.h"
#include "store/store.h"

namespace gpuq::daemon {
namespace {

namespace fs = std::filesystem;

using os::testing::owner_of;

class RealWorldUserTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = os::testing::TestUsers::unavailable(); !why.empty()) GTEST_SKIP() << why;
    ann_ = users_.add("ann");
    ASSERT_FALSE(ann_.login.empty()) << "useradd failed";
    char tmpl[] = "/tmp/gpuq-world-user-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    fs::create_directories(dir_ + "/jobs");
    std::ofstream(dir_ + "/sentinel") << "root's";
    auto store = store::Store::open(dir_ + "/gpuq.db", false);
    ASSERT_TRUE(store);
    store_ = std::move(*store);
    world_ = std::make_unique<RealWorld>(ioc_, *store_, RealWorldOptions{});
  }
  void TearDown() override {
    world_.reset();
    store_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  runner::RunSpec spec_of_ann() {
    runner::RunSpec spec;
    spec.argv = {"true"};
    spec.cwd = "/";
    auto who = world_->submitter_identity(ann_.login);
    EXPECT_TRUE(who && *who);
    spec.run_as = **who;
    return spec;
  }

  os::testing::TestUsers users_;
  os::UserIdentity ann_;
  boost::asio::io_context ioc_;
  std::string dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<RealWorld> world_;
};

TEST_F(RealWorldUserTest, AJobRunsAsItsSubmitterUnlessRootOrGone) {
  auto ann = world_->submitter_identity(ann_.login);
  ASSERT_TRUE(ann && *ann);
  EXPECT_EQ((*ann)->uid, ann_.uid);
  EXPECT_EQ((*ann)->home, ann_.home);
  auto root = world_->submitter_identity("root");
  ASSERT_TRUE(root);
  EXPECT_FALSE(*root);  // root's jobs run exactly as before
  auto older = world_->submitter_identity("");
  ASSERT_TRUE(older);
  EXPECT_FALSE(*older);
  auto gone = world_->submitter_identity("gpuqt-gone-user");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().code, Code::kNotFound);
  EXPECT_NE(gone.error().message.find("gpuqt-gone-user"), std::string::npos);
}

TEST_F(RealWorldUserTest, TheJobDirectoryIsTheUsersAndTheRunDirectoryTheDaemonsUntilItsShimStarts) {
  std::string run_dir = dir_ + "/jobs/7/run-1";
  ASSERT_TRUE(world_->create_run_dir(run_dir, spec_of_ann()));
  EXPECT_EQ(owner_of(dir_ + "/jobs/7").uid, ann_.uid);
  EXPECT_EQ(owner_of(dir_ + "/jobs/7").mode, 0700u);
  EXPECT_EQ(owner_of(run_dir).uid, 0u);
  EXPECT_EQ(owner_of(run_dir + "/run.json").uid, 0u);
  EXPECT_EQ(owner_of(run_dir + "/run.json").mode, 0600u);
  auto read = runner::read_run_spec(run_dir);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_TRUE(read->run_as);
  EXPECT_EQ(read->run_as->uid, ann_.uid);
  // A directory there already (the user's own, made in the job directory that is theirs) is
  // never used.
  fs::create_directory(dir_ + "/jobs/7/run-2");
  auto taken = world_->create_run_dir(dir_ + "/jobs/7/run-2", spec_of_ann());
  ASSERT_FALSE(taken);
  EXPECT_EQ(taken.error().code, Code::kConflict);
}

TEST_F(RealWorldUserTest, AJobDirectorySwappedForALinkIsNotFollowed) {
  fs::create_directory(dir_ + "/elsewhere");
  fs::create_directory_symlink(dir_ + "/elsewhere", dir_ + "/jobs/8");
  EXPECT_FALSE(world_->create_run_dir(dir_ + "/jobs/8/run-1", spec_of_ann()));
  EXPECT_FALSE(fs::exists(dir_ + "/elsewhere/run-1"));
}

TEST_F(RealWorldUserTest, AScriptJobsDirectoryIsMadeNewAndThenGivenToItsSubmitter) {
  std::string job_dir = dir_ + "/jobs/9";
  ASSERT_TRUE(world_->write_job_dir(job_dir, {{job_dir + "/script", "echo hi\n"}}, ann_.login));
  EXPECT_EQ(owner_of(job_dir).uid, ann_.uid);
  EXPECT_EQ(owner_of(job_dir + "/script").uid, ann_.uid);
  EXPECT_EQ(*os::read_file(job_dir + "/script"), "echo hi\n");
  // Root's jobs keep root's directories.
  ASSERT_TRUE(world_->write_job_dir(dir_ + "/jobs/10", {{dir_ + "/jobs/10/script", "x"}}, "root"));
  EXPECT_EQ(owner_of(dir_ + "/jobs/10").uid, 0u);
  // Never one found in its place.
  fs::create_directory_symlink(dir_ + "/elsewhere", dir_ + "/jobs/11");
  EXPECT_FALSE(world_->write_job_dir(dir_ + "/jobs/11", {{dir_ + "/jobs/11/script", "x"}}, ann_.login));
}

TEST_F(RealWorldUserTest, TheYieldFileIsNeverWrittenThroughALink) {
  std::string run_dir = dir_ + "/jobs/12/run-1";
  ASSERT_TRUE(world_->create_run_dir(run_dir, spec_of_ann()));
  fs::create_symlink(dir_ + "/sentinel", run_dir + "/yield");
  (void)world_->write_file(run_dir + "/yield", "{}");  // the job's own "yield" stands
  EXPECT_EQ(*os::read_file(dir_ + "/sentinel"), "root's");
  fs::remove(run_dir + "/yield");
  fs::rename(run_dir, run_dir + ".moved");  // the run directory swapped for a link
  fs::create_directory_symlink(dir_ + "/elsewhere-run", run_dir);
  fs::create_directory(dir_ + "/elsewhere-run");
  EXPECT_FALSE(world_->write_file(run_dir + "/yield", "{}"));
  EXPECT_FALSE(fs::exists(dir_ + "/elsewhere-run/yield"));
  fs::remove(run_dir);
  fs::rename(run_dir + ".moved", run_dir);
  fs::remove(run_dir + "/yield");
  ASSERT_TRUE(world_->write_file(run_dir + "/yield", "{}"));
  EXPECT_EQ(*os::read_file(run_dir + "/yield"), "{}");
  EXPECT_TRUE(world_->write_file(run_dir + "/yield", "{}"));  // asked again: still asked
}

TEST_F(RealWorldUserTest, TheYieldRequestIsWithdrawnOnlyFromTheRunDirectoryItself) {
  std::string run_dir = dir_ + "/jobs/14/run-1";
  ASSERT_TRUE(world_->create_run_dir(run_dir, spec_of_ann()));
  fs::create_directory(dir_ + "/elsewhere-run");
  std::ofstream(dir_ + "/elsewhere-run/yield") << "not the daemon's";
  fs::rename(run_dir, run_dir + ".moved");  // the run directory swapped for a link
  fs::create_directory_symlink(dir_ + "/elsewhere-run", run_dir);
  world_->remove_file(run_dir + "/yield");
  EXPECT_TRUE(fs::exists(dir_ + "/elsewhere-run/yield"));
  fs::remove(run_dir);
  fs::rename(run_dir + ".moved", run_dir);
  ASSERT_TRUE(world_->write_file(run_dir + "/yield", "{}"));
  world_->remove_file(run_dir + "/yield");
  EXPECT_FALSE(fs::exists(run_dir + "/yield"));
}

TEST_F(RealWorldUserTest, APullsLogIsTheUsersAndNeverWrittenThroughALink) {
  // A runtime whose pull prints its progress.
  std::string runtime = dir_ + "/docker";
  std::ofstream(runtime) << "#!/bin/sh\necho \"pulling $2\"\n";
  fs::permissions(runtime, fs::perms::owner_all);
  auto pull = [&](const std::string& log) {
    ImagePrep request;
    request.job_id = 15;
    request.runtime = runner::ContainerRuntime{runner::RuntimeKind::kDocker, runtime, {}};
    request.images = {"busybox:1"};
    request.pull = true;
    request.log_path = log;
    request.user = ann_.login;
    std::optional<ImagePrepResult> result;
    world_->prepare_images(request, [&](ImagePrepResult r) { result = std::move(r); });
    for (int i = 0; i < 1000 && !result; ++i) ioc_.run_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(result);
    EXPECT_TRUE(result->ok) << result->error;
  };
  std::string log = dir_ + "/jobs/15/pull.log";
  pull(log);
  EXPECT_EQ(*os::read_file(log), "pulling busybox:1\n");
  EXPECT_EQ(owner_of(log).uid, ann_.uid);
  EXPECT_EQ(owner_of(log).mode, 0600u);
  // The job's user leaves a link named pull.log: the pull goes on, writing nothing through it.
  fs::remove(log);
  fs::create_symlink(dir_ + "/sentinel", log);
  pull(log);
  EXPECT_EQ(*os::read_file(dir_ + "/sentinel"), "root's");
  EXPECT_EQ(owner_of(dir_ + "/sentinel").uid, 0u);
}

TEST_F(RealWorldUserTest, RequiresTestsRunAsTheSubmitter) {
  auto who = os::identity_of_login(ann_.login);
  ASSERT_TRUE(who);
  std::string why;
  EXPECT_TRUE(ConditionChecker::run_test(fmt::format("test $(id -u) = {}", ann_.uid), "/", {{"PATH", "/usr/bin:/bin"}},
                                         Millis(10'000), &why, *who)) << why;
  EXPECT_FALSE(ConditionChecker::run_test("cat /etc/shadow", "/", {{"PATH", "/usr/bin:/bin"}}, Millis(10'000),
                                          &why, *who));
  EXPECT_NE(why.find("Permission denied"), std::string::npos) << why;
  // Without a user: the daemon's own, as before.
  EXPECT_TRUE(ConditionChecker::run_test("test $(id -u) = 0", "/", {{"PATH", "/usr/bin:/bin"}}, Millis(10'000),
                                         &why)) << why;
}

}  // namespace
}  // namespace gpuq::daemon
