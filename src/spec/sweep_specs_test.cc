// SPDX-License-Identifier: Apache-2.0
#include "spec/sweep_specs.h"

#include <gtest/gtest.h>

namespace gpuq::spec {
namespace {

JobStep command_step(std::vector<std::string> argv) {
  JobStep step;
  step.argv = std::move(argv);
  step.name = default_step_name(step);
  return step;
}

TEST(ElementSpecs, ArgumentsAreSubstitutedAndVariablesSet) {
  JobSpec base;
  base.argv = {"python", "eval.py", "--shard", "{i}"};
  auto sweep = parse_array("3,7");
  ASSERT_TRUE(sweep);
  std::vector<JobSpec> specs = element_specs(base, "shards", *sweep);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[1].name, "shards[7]");
  EXPECT_EQ(specs[1].argv.back(), "7");
  EXPECT_EQ(specs[1].env.at("GPUQ_ARRAY_INDEX"), "7");
}

TEST(ElementSpecs, EachStepIsSubstitutedAsAJobsArgumentsAre) {
  JobSpec base;
  base.steps.push_back(command_step({"prep", "--shard", "{i}", "--lr={lr}"}));
  JobStep script;
  script.script_name = "/x/train.sh";
  script.script_text = "#!/bin/bash\necho {i} ${i}\n";
  script.script_args = {"--lr", "{lr}", "${lr}"};
  script.name = "train {lr}";
  script.done_if = "test -s out/{lr}/{i}.done";
  script.image = "busybox";
  base.steps.push_back(script);
  base.done_if = "test -s {lr}";  // the job's own test is not substituted (as before steps)
  auto sweep = make_grid({{"lr", {"1e-4", "3e-4"}}});
  ASSERT_TRUE(sweep);
  std::vector<JobSpec> specs = element_specs(base, "g", *sweep);
  ASSERT_EQ(specs.size(), 2u);
  const JobSpec& second = specs[1];
  EXPECT_EQ(second.name, "g[lr=3e-4]");
  EXPECT_EQ(second.steps[0].argv, (std::vector<std::string>{"prep", "--shard", "1", "--lr=3e-4"}));
  EXPECT_EQ(second.steps[0].name, "prep --shard 1 --lr=3e-4");
  EXPECT_EQ(second.steps[1].script_args, (std::vector<std::string>{"--lr", "3e-4", "${lr}"}));
  EXPECT_EQ(second.steps[1].name, "train 3e-4");
  EXPECT_EQ(second.steps[1].done_if, "test -s out/3e-4/1.done");
  EXPECT_EQ(second.steps[1].script_text, script.script_text) << "a script's text stays as written";
  EXPECT_EQ(second.steps[1].image, "busybox");
  EXPECT_EQ(second.done_if, "test -s {lr}");
  EXPECT_EQ(second.env.at("GPUQ_PARAM_LR"), "3e-4");
  EXPECT_EQ(specs[0].steps[0].argv[2], "0");
}

}  // namespace
}  // namespace gpuq::spec
