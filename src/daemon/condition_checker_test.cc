// SPDX-License-Identifier: Apache-2.0
// Real shell tests: what a REQUIRES / DONE_IF test sees of the job's environment.
#include "daemon/condition_checker.h"

#include <gtest/gtest.h>

namespace gpuq::daemon {
namespace {

TEST(ConditionCheckerTest, ATestSeesTheJobsEnvironmentButNoRunVariable) {
  std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"},
                                            {"MODEL", "a15"},
                                            {"GPUQ_RUN_ID", "7-1-00ff"},
                                            {"GPUQ_JOB_ID", "7"},
                                            {"CUDA_VISIBLE_DEVICES", "3"}};
  std::string why;
  EXPECT_TRUE(ConditionChecker::run_test("test \"$MODEL\" = a15", "/", env, Millis(10'000), &why)) << why;
  EXPECT_TRUE(ConditionChecker::run_test(
      "test -z \"${GPUQ_RUN_ID+set}\" && test -z \"${GPUQ_JOB_ID+set}\" && "
      "test -z \"${CUDA_VISIBLE_DEVICES+set}\"",
      "/", env, Millis(10'000), &why))
      << "a condition test carried a run variable: " << why;
}

// The job's variables reach the test through `env -i NAME=VALUE...`: a name that looks like one
// of env's options ("-S...", which splits its text into a command and runs it) must be a
// variable like any other, never an option. Before the `--` after `-i`, "-Strue =x" made env run
// `true`, so a REQUIRES `false` held.
TEST(ConditionCheckerTest, AVariableNameIsNeverAnOptionOfEnv) {
  std::map<std::string, std::string> env = {{"PATH", "/usr/bin:/bin"}, {"-Strue ", "x"}};
  std::string why;
  EXPECT_FALSE(ConditionChecker::run_test("false", "/", env, Millis(10'000), &why));
  EXPECT_NE(why.find("`false` exited 1"), std::string::npos) << why;
  EXPECT_TRUE(ConditionChecker::run_test("env | grep -qxF -- '-Strue =x'", "/", env, Millis(10'000), &why))
      << why;
}

}  // namespace
}  // namespace gpuq::daemon
