// SPDX-License-Identifier: Apache-2.0
#include "os/identity.h"

#include <gtest/gtest.h>

#include "os/command.h"
#include "os/testing/test_users.h"

namespace gpuq::os {
namespace {

TEST(RunsAsSubmitter, OnlyARootDaemonAndOnlyForAnotherLogin) {
  EXPECT_TRUE(runs_as_submitter(0, "ann"));
  EXPECT_FALSE(runs_as_submitter(0, "root"));
  EXPECT_FALSE(runs_as_submitter(0, ""));
  EXPECT_FALSE(runs_as_submitter(1000, "ann"));
}

TEST(IdentityOfLogin, AnUnknownLoginIsNotFoundAndNamed) {
  auto who = identity_of_login("gpuqt-no-such-user");
  ASSERT_FALSE(who);
  EXPECT_EQ(who.error().code, Code::kNotFound);
  EXPECT_NE(who.error().message.find("gpuqt-no-such-user"), std::string::npos);
}

TEST(IdentityOfLogin, RootHasUidZeroAndItsGroups) {
  auto who = identity_of_login("root");
  ASSERT_TRUE(who) << who.error().message;
  EXPECT_EQ(who->uid, 0u);
  EXPECT_FALSE(who->groups.empty());
  EXPECT_FALSE(who->home.empty());
}

class RunCommandAsUser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::TestUsers::unavailable(); !why.empty()) GTEST_SKIP() << why;
    ann_ = users_.add("ann");
    ASSERT_FALSE(ann_.login.empty()) << "useradd failed";
  }
  testing::TestUsers users_;
  UserIdentity ann_;
};

TEST_F(RunCommandAsUser, TheChildHasTheUsersIdsGroupsAndNoCapability) {
  CommandOptions options;
  options.run_as = ann_;
  auto result = run_command_with(
      {"sh", "-c", "id -u; id -g; id -G; grep -E '^Cap(Inh|Prm|Eff|Amb)' /proc/self/status"},
      Millis(10'000), options);
  ASSERT_TRUE(result) << result.error().message;
  ASSERT_EQ(result->exit_code, 0) << result->err;
  std::string groups;
  for (gid_t g : ann_.groups) groups += (groups.empty() ? "" : " ") + std::to_string(g);
  std::string expected = fmt::format("{}\n{}\n{}\n", ann_.uid, ann_.gid, groups);
  EXPECT_EQ(result->out.substr(0, expected.size()), expected);
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"}) {
    EXPECT_NE(result->out.find(std::string(set) + ":\t0000000000000000"), std::string::npos)
        << set << " in\n" << result->out;
  }
}

TEST_F(RunCommandAsUser, TheUserCannotReadRootsPrivateFiles) {
  CommandOptions options;
  options.run_as = ann_;
  auto result = run_command_with({"cat", "/etc/shadow"}, Millis(10'000), options);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_NE(result->exit_code, 0);
  EXPECT_NE(result->err.find("Permission denied"), std::string::npos) << result->err;
}

TEST_F(RunCommandAsUser, TheEnvironmentInputAndTimeoutBehaveAsWithoutAUser) {
  CommandOptions options;
  options.run_as = ann_;
  options.env = {"GPUQ_TEST_VALUE=seven"};
  options.input = "from stdin";
  auto result = run_command_with({"sh", "-c", "echo $GPUQ_TEST_VALUE; cat"}, Millis(10'000), options);
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->out, "seven\nfrom stdin");
  auto slow = run_command_with({"sleep", "30"}, Millis(200), options);
  ASSERT_TRUE(slow) << slow.error().message;
  EXPECT_TRUE(slow->timed_out);
}

TEST_F(RunCommandAsUser, AMissingProgramIsNotFound) {
  CommandOptions options;
  options.run_as = ann_;
  auto result = run_command_with({"gpuq-no-such-program"}, Millis(10'000), options);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, Code::kNotFound);
}

}  // namespace
}  // namespace gpuq::os
