// SPDX-License-Identifier: Apache-2.0
// `gpuq submit --step` and the container flags (--image, --pull, --container-user) against a
// scripted daemon: what the submit request holds, and every usage error, which sends nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/fake_transport.h"
#include "model/spec_json.h"

namespace gpuq::cli {
namespace {

using testing::json_answer;
using testing::TempDir;

constexpr const char* kJob = R"({"id":7,"name":"pipe","state":"pending","runs":[]})";

class SubmitSteps : public testing::ScriptedCli {
 protected:
  // Submits `args` to a daemon that queues job 7, and returns the request sent, checked as the
  // daemon reads it.
  Json submitted(const std::vector<std::string>& args) {
    script({{"/v1/jobs", json_answer(201, kJob)}});
    EXPECT_EQ(run(args), 0) << err();
    Json body = sent_body(process_.daemon.requests.size() - 1);
    nlohmann::json job = nlohmann::json::parse(body.dump());
    for (const char* sweep : {"array", "grid", "max_running"}) job.erase(sweep);  // the daemon's
    auto spec = spec_from_json(job);
    EXPECT_TRUE(spec) << spec.error().message;
    return body;
  }

  TempDir dir_;
};

TEST_F(SubmitSteps, EachStepInOrderAScriptWhenItsFirstWordNamesAFile) {
  std::string prepare = dir_.write("prepare.sh", "#!/bin/bash\nmake data\n");
  std::string train = dir_.write("train.sh", "#!/bin/bash\npython train.py \"$@\"\n");
  Json body = submitted({"submit", "--name", "pipe", "--gpus", "2", "--step", prepare, "--step",
                         train + " --lr 3e-4 --note 'two words'", "--step",
                         "python eval.py --out \"results/eval 1.json\""});
  EXPECT_EQ(out(), "submitted job 7 (pipe)\n");
  EXPECT_EQ(body["name"], "pipe");
  EXPECT_EQ(body["gpus"], 2);
  EXPECT_FALSE(body.contains("argv"));
  EXPECT_FALSE(body.contains("script"));
  ASSERT_EQ(body["steps"].size(), 3u) << body;
  EXPECT_EQ(body["steps"][0]["script"]["name"], prepare);
  EXPECT_EQ(body["steps"][0]["script"]["text"], "#!/bin/bash\nmake data\n");
  EXPECT_EQ(body["steps"][0]["script"]["args"], Json::array());
  EXPECT_EQ(body["steps"][1]["script"]["name"], train);
  EXPECT_EQ(body["steps"][1]["script"]["args"],
            Json::parse(R"(["--lr", "3e-4", "--note", "two words"])"));
  EXPECT_EQ(body["steps"][2], Json::parse(R"({"argv":
      ["python", "eval.py", "--out", "results/eval 1.json"]})"));
}

TEST_F(SubmitSteps, AStepScriptsHeadersSetTheStep) {
  std::string prepare = dir_.write(
      "prepare.sh",
      "#!/bin/bash\n#gpuq name=prepare timeout=30m image=busybox:1.36\n# DONE_IF=\"test -s d\"\n"
      "make data\n");
  Json body = submitted({"submit", "--step", prepare, "--step", "true"});
  EXPECT_EQ(body["steps"][0]["name"], "prepare");
  EXPECT_EQ(body["steps"][0]["timeout"], "30m");
  EXPECT_EQ(body["steps"][0]["image"], "busybox:1.36");
  EXPECT_EQ(body["steps"][0]["done_if"], "test -s d");
  EXPECT_FALSE(body.contains("image")) << "the step's image is not the job's";
  EXPECT_FALSE(body.contains("gpus"));

  std::string gpus = dir_.write("gpus.sh", "#!/bin/bash\n#gpuq timeout=1h\n#gpuq gpus=2\necho\n");
  expect_usage_error({"submit", "--step", gpus},
                     gpus +
                         ":3: gpus= sets the whole job, not one step: set it on the job (gpuq "
                         "submit --gpus");
}

TEST_F(SubmitSteps, BadStepsAreUsageErrorsNamingTheStep) {
  std::string train = dir_.write("train.sh", "#!/bin/bash\necho\n");
  expect_usage_error({"submit", "--step", "true", "--step", "train.sh --lr \"3e-4"},
                     "--step 'train.sh --lr \"3e-4' (step 2): unbalanced double quote in \"3e-4; "
                     "close the quote");
  expect_usage_error({"submit", "--step", "prep && train"},
                     "--step 'prep && train' (step 1): '&&' is shell syntax");
  expect_usage_error({"submit", "--step", "python x.py > log"}, "bash -c '...'");
  expect_usage_error({"submit", "--step", "train.sh --out $OUT"},
                     "'$OUT' would be expanded by a shell");
  expect_usage_error({"submit", "--step", "  "},
                     "--step '  ' (step 1): a step needs a script or a command");
  expect_usage_error({"submit", "--step", "true", train},
                     "--step and a script '" + train + "': with --step, the steps say what runs");
  expect_usage_error({"submit", "--step", "true", "--", "python", "x.py"},
                     "--step and a command after -- 'python'");
  std::string empty = dir_.write("empty.sh", "\n");
  expect_usage_error({"submit", "--step", empty}, empty + ": script is empty");
  std::string binary = dir_.write("prog", std::string("\x7f"
                                                      "ELF\0\0",
                                                      6));
  expect_usage_error({"submit", "--step", binary + " --fast"},
                     "to run the file as a program instead, write --step 'env " + binary);
  std::string plan = dir_.write("plan.json", R"({"jobs":[{"id":"a","command":["true"]}]})");
  expect_usage_error({"submit", "--step", "true", plan}, "--step with a plan");
}

TEST_F(SubmitSteps, ASweepOfStepsSendsBoth) {
  Json body = submitted({"submit", "--name", "pipe", "--array", "0-3", "--step", "prep {i}",
                         "--step", "train --shard {i}"});
  EXPECT_EQ(body["array"], "0-3");
  EXPECT_EQ(body["steps"][1]["argv"], Json::parse(R"(["train", "--shard", "{i}"])"));
  expect_usage_error({"submit", "--max-running", "2", "--step", "true"},
                     "--max-running caps an array or a grid");
}

TEST_F(SubmitSteps, ContainerFlags) {
  Json body = submitted({"submit", "--image", "nvcr.io/nvidia/pytorch:24.01-py3", "--pull",
                         "always", "--container-user", "1000:1000", "--", "python", "train.py"});
  EXPECT_EQ(body["image"], "nvcr.io/nvidia/pytorch:24.01-py3");
  EXPECT_EQ(body["pull"], "always");
  EXPECT_EQ(body["container_user"], "1000:1000");
  EXPECT_EQ(body["argv"], Json::parse(R"(["python", "train.py"])"));

  body = submitted({"submit", "--image", "busybox", "--step", "true", "--step", "false"});
  EXPECT_EQ(body["image"], "busybox");

  // A step's own image (its script's image=) makes --pull meaningful without --image.
  std::string step = dir_.write("s.sh", "#!/bin/sh\n#gpuq image=busybox\necho\n");
  body = submitted({"submit", "--pull", "never", "--step", step});
  EXPECT_EQ(body["pull"], "never");
  EXPECT_FALSE(body.contains("image"));
}

TEST_F(SubmitSteps, AScriptsContainerHeadersAndTheFlagsThatReplaceThem) {
  std::string job = dir_.write(
      "job.sh", "#!/bin/bash\n#gpuq image=busybox pull=never container-user=0:0\necho\n");
  Json body = submitted({"submit", job});
  EXPECT_EQ(body["image"], "busybox");
  EXPECT_EQ(body["pull"], "never");
  EXPECT_EQ(body["container_user"], "0:0");
  body = submitted({"submit", "--image", "ubuntu:24.04", "--pull", "always", job});
  EXPECT_EQ(body["image"], "ubuntu:24.04");
  EXPECT_EQ(body["pull"], "always");
  EXPECT_EQ(body["container_user"], "0:0");

  std::string bad = dir_.write("bad.sh", "#!/bin/bash\n#gpuq image=Busybox\necho\n");
  expect_usage_error({"submit", bad},
                     bad + ":2: image=Busybox: 'Busybox' is not an image reference");
}

TEST_F(SubmitSteps, BadContainerFlagsAreUsageErrors) {
  expect_usage_error({"submit", "--image", "Busybox", "--", "true"},
                     "--image: 'Busybox' is not an image reference: the path 'Busybox' has "
                     "capital letters; image paths are lowercase ('busybox')");
  expect_usage_error({"submit", "--image", "busybox", "--pull", "sometimes", "--", "true"},
                     "--pull: pull policy 'sometimes' is not one of always, missing, never");
  expect_usage_error({"submit", "--image", "busybox", "--container-user", "me me", "--", "true"},
                     "--container-user: 'me me' is not a container user");
  expect_usage_error({"submit", "--pull", "always", "--", "true"},
                     "--pull applies only to a job that runs in a container: give --image IMAGE "
                     "too, or leave --pull out");
  expect_usage_error({"submit", "--container-user", "1:1", "--step", "true"},
                     "--container-user applies only to a job that runs in a container");
  std::string plan = dir_.write("plan.json", R"({"jobs":[{"id":"a","command":["true"]}]})");
  expect_usage_error({"submit", "--image", "busybox", plan}, "--image with a plan");
}

TEST_F(SubmitSteps, SimulateRunsAPlanWithStepsAndImagesForEachJobsEstimate) {
  dir_.write("prep.sh", "#!/bin/bash\n#gpuq timeout=10m\nmake data\n");
  std::string plan = dir_.write("plan.json", R"({"jobs": [
      {"id": "pipe", "gpus": 1, "est_hours": 2, "image": "busybox",
       "steps": [{"script": "prep.sh"}, {"argv": ["train"], "image": "ubuntu:24.04"}]},
      {"id": "eval", "gpus": 1, "est_hours": 1, "deps": ["pipe"], "command": ["true"]}]})");
  process_.daemon.handler = nullptr;
  EXPECT_EQ(run({"simulate", plan, "--gpus", "1", "--json"}), 0) << err();
  Json result = Json::parse(out(), nullptr, false);
  ASSERT_TRUE(result.is_object()) << out();
  EXPECT_EQ(result["makespan_s"], 3 * 3600) << out();
}

}  // namespace
}  // namespace gpuq::cli
