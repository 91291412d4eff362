// SPDX-License-Identifier: Apache-2.0
// The [users] table (docs/lab.md): its settings, a user's own limits, and every mistake refused
// at its line with the fix.
#include <gtest/gtest.h>

#include "config/config.h"
#include "config/config_test_support.h"

namespace gpuq::config {
namespace {

TEST(ConfigUsers, DefaultsWithoutTheTable) {
  auto config = parse_config("", kPath);
  ASSERT_TRUE(config) << config.error().message;
  EXPECT_EQ(config->users.group, "gpuq");
  EXPECT_TRUE(config->users.admins.empty());
  EXPECT_TRUE(config->users.fair_share);
  EXPECT_EQ(config->users.fair_share_half_life_ms, 7LL * 24 * 3'600'000);
  EXPECT_EQ(config->users.limits, UserLimits{});
  EXPECT_TRUE(config->users.per_user.empty());
}

TEST(ConfigUsers, SettingsAndAUsersOwnLimits) {
  auto config = parse_config(
      "[users]\n"
      "group = \"lab\"\n"
      "admins = [\"ann\", \"@wheel\"]\n"
      "fair_share = false\n"
      "fair_share_half_life = \"36h\"\n"
      "max_gpus = 4\n"
      "max_running = 8\n"
      "max_queued = 1000\n"
      "[users.bob]\n"
      "max_gpus = 8\n",
      kPath);
  ASSERT_TRUE(config) << config.error().message;
  const UsersConfig& u = config->users;
  EXPECT_EQ(u.group, "lab");
  EXPECT_EQ(u.admins, (std::vector<std::string>{"ann", "@wheel"}));
  EXPECT_FALSE(u.fair_share);
  EXPECT_EQ(u.fair_share_half_life_ms, 36LL * 3'600'000);
  EXPECT_EQ(u.limits.max_gpus, 4);
  EXPECT_EQ(u.limits.max_running, 8);
  EXPECT_EQ(u.limits.max_queued, 1000);
  ASSERT_EQ(u.per_user.count("bob"), 1u);
  EXPECT_EQ(u.per_user.at("bob").max_gpus, 8);
  EXPECT_FALSE(u.per_user.at("bob").max_running.has_value()) << "not set: the default applies";
}

TEST(ConfigUsers, MistakesAreRefusedAtTheirLineWithTheFix) {
  expect_refused({
      {"[users]\ngroup = 7\n", "2:9", "users.group must be the name of a group"},
      {"[users]\ngroup = \"a b\"\n", "2:9", "users.group must be the name of a group"},
      {"[users]\nadmins = \"ann\"\n", "2:10", "users.admins must be a list"},
      {"[users]\nadmins = [\"ann\", \"@\"]\n", "2:18", "\"@\" is not a login or group name"},
      {"[users]\nfair_share = \"yes\"\n", "2:14", "true or false"},
      {"[users]\nfair_share_half_life = \"5m\"\n", "2:24", "from 1h to 365d"},
      {"[users]\nmax_gpus = 0\n", "2:12", "users.max_gpus must be a whole number from 1"},
      {"[users]\nmax_running = \"4\"\n", "2:15", "users.max_running must be a whole number"},
      {"[users]\nmax_jobs = 4\n", "2:1", "unknown setting users.max_jobs"},
      {"[users.bob]\nmax_gpus = -1\n", "2:12", "users.bob.max_gpus must be a whole number"},
      {"[users.bob]\nadmins = []\n", "2:1", "a user's table [users.bob] takes max_gpus"},
      {"[users.\"a b\"]\nmax_gpus = 1\n", "1:8", "is not a login name"},
      {"max_gpus = 4\n", "1:1", "write it under [users]"},
  });
}

}  // namespace
}  // namespace gpuq::config
