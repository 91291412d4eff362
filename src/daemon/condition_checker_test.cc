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

}  // namespace
}  // namespace gpuq::daemon
