// SPDX-License-Identifier: Apache-2.0
// The container keys of script headers (image=, pull=, container-user=) and a step's script
// (ScriptRole::kStep), which sets only its own step.
#include <gtest/gtest.h>

#include "spec/headers.h"

namespace gpuq::spec {
namespace {

using nlohmann::json;

Result<HeaderFields> job_headers(const std::string& text) {
  return parse_script_headers("job.sh", text);
}

Result<HeaderFields> step_headers(const std::string& text) {
  return parse_script_headers("step.sh", text, ScriptRole::kStep);
}

TEST(ContainerHeaders, ImagePullAndUser) {
  auto parsed = job_headers(
      "#!/bin/bash\n#gpuq image=nvcr.io/nvidia/pytorch:24.01-py3 pull=always\n"
      "#gpuq container-user=1000:1000\npython x.py\n");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->fields, json::parse(R"({"image": "nvcr.io/nvidia/pytorch:24.01-py3",
                                           "pull": "always", "container_user": "1000:1000"})"));
  EXPECT_EQ(parsed->lines.at("container_user"), 3);
}

TEST(ContainerHeaders, BadValuesAreErrorsAtTheirLine) {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {
           Case{"#gpuq image=Busybox\n",
                "job.sh:1: image=Busybox: 'Busybox' is not an image reference: the path "
                "'Busybox' has capital letters"},
           Case{"#gpuq image\n", "job.sh:1: 'image' needs a value, as in image=nvcr.io/"},
           Case{"#gpuq image=a pull=sometimes\n", "job.sh:1: pull=sometimes: pull policy"},
           Case{"#gpuq image=a container-user=a:b:c\n",
                "job.sh:1: container-user=a:b:c: 'a:b:c' is not a container user"},
           Case{"#!/bin/sh\n#gpuq pull=never\n",
                "job.sh:2: pull= applies only to a job that runs in a container; add image=IMAGE "
                "or remove pull="},
           Case{"#gpuq container_user=0:0\n", "job.sh:1: container-user= applies only"},
           Case{"#gpuq image=a\n#gpuq image=b\n", "job.sh:2: 'image' is already set at line 1"},
       }) {
    auto parsed = job_headers(c.text);
    ASSERT_FALSE(parsed) << c.text;
    EXPECT_NE(parsed.error().message.find(c.says), std::string::npos)
        << c.text << " -> " << parsed.error().message;
  }
  // A bad image is one error, not also "pull= needs image=".
  HeaderScan scan = scan_script_headers("job.sh", "#gpuq image=A pull=always\n");
  EXPECT_EQ(scan.errors.size(), 1u);
}

TEST(StepHeaders, AStepScriptSetsItsNameTimeoutDoneIfAndImage) {
  auto parsed = step_headers(
      "#!/bin/bash\n#gpuq name=prepare timeout=30m image=busybox\n"
      "# DONE_IF=\"test -s data/ready\"\nmake data\n");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->fields, json::parse(R"({"name": "prepare", "timeout": "30m",
                                           "image": "busybox", "done_if": "test -s data/ready"})"));
  EXPECT_EQ(parsed->lines.at("done_if"), 3);
}

TEST(StepHeaders, JobKeysInAStepScriptAreErrorsSayingToSetThemOnTheJob) {
  HeaderScan scan = scan_script_headers(
      "step.sh",
      "#!/bin/bash\n#gpuq timeout=1h gpus=2\n# gpuq-out: results/x.json\n#gpuq pull=always\n"
      "#gpuq after=prep array=0-3\necho\n",
      ScriptRole::kStep);
  ASSERT_EQ(scan.errors.size(), 5u);
  EXPECT_EQ(scan.errors[0].located_message(),
            "step.sh:2: gpus= sets the whole job, not one step: set it on the job (gpuq submit "
            "--gpus, or \"gpus\" in a plan's job) and remove it from this step's script, which may "
            "set only name, timeout, done-if and image");
  EXPECT_EQ(scan.errors[1].line, 3);
  EXPECT_NE(scan.errors[1].message.find("# gpuq-out: sets the whole job"), std::string::npos);
  EXPECT_NE(scan.errors[1].message.find("\"outputs\" in a plan's job"), std::string::npos);
  EXPECT_NE(scan.errors[2].message.find("pull= sets the whole job"), std::string::npos)
      << "not 'pull= needs image=': " << scan.errors[2].message;
  EXPECT_EQ(scan.errors[3].line, 5);
  EXPECT_EQ(scan.errors[4].line, 5);
  EXPECT_FALSE(scan.sweep);
  EXPECT_EQ(scan.headers.fields, json::parse(R"({"timeout": "1h"})"));
  EXPECT_EQ(scan.headers.lines.size(), 1u);
  // The same script is fine as a job's own.
  EXPECT_TRUE(job_headers("#gpuq timeout=1h gpus=2\necho\n"));
}

TEST(StepHeaders, ParseErrorsComeInLineOrder) {
  auto parsed = step_headers("#gpuq gpus=2\n#gpuq timeout=soon\necho\n");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message.substr(0, 22), "step.sh:1: gpus= sets ");
}

}  // namespace
}  // namespace gpuq::spec
