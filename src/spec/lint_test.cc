// SPDX-License-Identifier: Apache-2.0
#include "spec/lint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "spec/headers.h"
#include "spec/script.h"

namespace gpuq::spec {
namespace {

class LintFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("gpuq-lint-") + std::to_string(getpid()) + "-" + info->name());
    std::filesystem::create_directories(dir_);
    // Relative paths in plans are taken from the plan's directory; lint's default cwd (for
    // jobs without one) is the process's, so run from the temp directory.
    old_cwd_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_);
  }
  void TearDown() override {
    std::filesystem::current_path(old_cwd_);
    std::filesystem::remove_all(dir_);
  }

  std::string write(const std::string& name, const std::string& text) {
    auto path = dir_ / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }

  std::vector<std::string> lint(const std::vector<std::string>& names, LintOptions options = {}) {
    std::vector<std::string> paths;
    for (const auto& n : names) paths.push_back((dir_ / n).string());
    std::vector<std::string> out;
    for (const auto& d : lint_files(paths, options)) {
      std::string text = d.text();
      std::string prefix = dir_.string() + "/";
      for (size_t at; (at = text.find(prefix)) != std::string::npos;) text.erase(at, prefix.size());
      out.push_back(text);
    }
    return out;
  }

  std::filesystem::path dir_;
  std::filesystem::path old_cwd_;
};

TEST_F(LintFiles, CleanScriptHasNoFindings) {
  write("ok.sh", "#!/bin/bash\n#gpuq gpus=1\nif true; then\n  echo hi\nfi\n");
  EXPECT_EQ(lint({"ok.sh"}), std::vector<std::string>{});
}

TEST_F(LintFiles, BashSyntaxErrorsNameTheLine) {
  write("bad.sh", "#!/bin/bash\n#gpuq gpus=1\nif true; then\n  echo hi\nfi\nfi\necho after\n");
  EXPECT_EQ(lint({"bad.sh"}),
            (std::vector<std::string>{
                "bad.sh:6: error: shell syntax: syntax error near unexpected token `fi' (the "
                "line reads: fi)"}));
  write("open.sh", "echo start\nwhile true; do\n  echo x\n");
  EXPECT_EQ(lint({"open.sh"}),
            (std::vector<std::string>{
                "open.sh:4: error: shell syntax: syntax error: unexpected end of file"}));
}

TEST_F(LintFiles, SweepsInPlansAndHeadersAreCheckedWithTheirLinesAndCounts) {
  write("shard.sh", "#!/bin/bash\n#gpuq array=0-9%2\necho {i}\n");
  write("big.sh", "#!/bin/bash\n#gpuq gpus=1\n#gpuq grid=a=0..199 grid=b=0..99\necho\n");
  write("bad.sh", "#!/bin/bash\n#gpuq grid=lr=1,2\n#gpuq array=0-1\necho\n");
  write("plan.json", R"({"jobs": [
  {"id": "shards", "script": "shard.sh", "gpus": 1},
  {"id": "one", "command": ["x"], "deps": ["shards[9]"]},
  {"id": "report", "command": ["y"], "deps": ["shards", "shards[10]"]},
  {"id": "wide", "command": ["z"], "array": "0-1-2"}
]})");
  EXPECT_EQ(lint({"plan.json", "big.sh", "bad.sh"}),
            (std::vector<std::string>{
                "bad.sh:3: error: array= and grid=: give one (a grid's elements are numbered as "
                "an array's)",
                "big.sh:3: warning: the grid has 20000 elements, more than the default [sweeps] "
                "max_elements (10000): the daemon refuses it unless its config.toml allows that "
                "many",
                "plan.json:4: error: job 'report': dep 'shards[10]': array 'shards' (line 2) has "
                "no such element; its 10 elements are shards[0] to shards[9]",
                "plan.json:5: error: job 'wide': \"array\": --array range '0-1-2': a range is two "
                "whole numbers from 0 and an optional step, as in 0-9 or 0-9:3"}));
}

// Knowing the daemon's limit (gpuq lint asks it), a sweep over it is an error, in a header and
// in a plan, and one over the default but within it is fine.
TEST_F(LintFiles, ASweepIsCheckedAgainstTheDaemonsLimitWhenItIsKnown) {
  write("big.sh", "#!/bin/bash\n#gpuq grid=a=0..199 grid=b=0..99\necho\n");
  write("plan.json", R"({"jobs": [{"id": "wide", "command": ["z"], "array": "0-29"}]})");
  LintOptions options;
  options.max_sweep_elements = 20;
  EXPECT_EQ(lint({"plan.json", "big.sh"}, options),
            (std::vector<std::string>{
                "big.sh:2: error: the grid has 20000 elements, more than the daemon's [sweeps] "
                "max_elements (20): split it, or raise max_elements in its config.toml",
                "plan.json:1: error: job 'wide': the array has 30 elements, more than the daemon's "
                "[sweeps] max_elements (20): split it, or raise max_elements in its config.toml"}));
  options.max_sweep_elements = 50'000;
  EXPECT_EQ(lint({"plan.json", "big.sh"}, options), std::vector<std::string>{});
}

TEST_F(LintFiles, OtherInterpretersAreNotCheckedWithBash) {
  write("x.py", "#!/usr/bin/env python3\n#gpuq gpus=1\nif True:\n    print('fi )')\n");
  EXPECT_EQ(lint({"x.py"}), std::vector<std::string>{});
  write("s.sh", "#!/usr/bin/env -S bash -e\nfi\n");
  EXPECT_EQ(lint({"s.sh"}).size(), 1u);
}

TEST_F(LintFiles, ScriptHeaderTextAndGpuErrors) {
  write("h.sh", "#!/bin/bash\n#gpuq gpus=4 gpu=1\necho\n#gpuq hold\n");
  write("empty.sh", "");
  EXPECT_EQ(
      lint({"h.sh", "empty.sh", "missing.sh"}, LintOptions{2}),
      (std::vector<std::string>{
          "empty.sh: error: script is empty; an empty job would 'succeed' without doing "
          "anything, so gpuq "
          "refuses it",
          "h.sh:2: error: unknown directive 'gpu' in #gpuq line; did you mean 'gpus'? known: "
          "name, gpus, "
          "priority, after, after-any, after-notok, requires, done-if, wait-file, lane, "
          "retries, retry-delay, "
          "timeout, est, gpu-mem, share, not-before, hold, preempt, restart-within, requires-warn, "
          "quiet, warn-after, array, grid, max-running, image, pull, container-user",
          "h.sh:2: error: the script asks for 4 GPUs; this machine has 2",
          "h.sh:4: error: gpuq directive below the header block (the first command is at "
          "line 3); gpuq reads its own directives (#gpuq, # gpuq-resume:) only from the comment "
          "lines at the top of the script: move this line above line 3",
          "missing.sh: error: no such script; check the path (relative paths are taken from "
          "the current "
          "directory)",
      }));
}

TEST_F(LintFiles, PreemptionKeys) {
  write("yield.sh", "#!/bin/bash\n#gpuq gpus=1 preempt=yield\necho\n");
  write("restart.py", "#!/usr/bin/env python3\n#gpuq preempt=restart restart_within=30m\npass\n");
  write("within.sh", "#!/bin/bash\n#gpuq restart-within=30m\necho\n");
  write("plan.json", R"({"jobs": [
  {"id": "a", "script": "yield.sh"},
  {"id": "b", "command": ["true"], "preempt": "restart", "restart_within": "1h"},
  {"id": "c", "command": ["true"], "preempt": "sometimes"}]})");
  EXPECT_EQ(lint({"yield.sh", "restart.py", "within.sh", "plan.json"}),
            (std::vector<std::string>{
                "plan.json:4: error: job 'c': bad preempt mode 'sometimes': use yield (the job "
                "saves its state and exits 75), restart (killed and rerun) or never",
                "within.sh:2: error: restart-within= applies only to preempt=restart (this "
                "script's mode is never); add preempt=restart or remove restart-within=",
            }));
}

// The checkpoint examples of docs/jobs.md are real jobs: their headers and syntax must pass.
TEST(LintExamples, CheckpointExamplesAreClean) {
  for (const char* name : {"count.sh", "count.py"}) {
    std::string path = std::string(GPUQ_SOURCE_DIR) + "/examples/checkpoint/" + name;
    EXPECT_EQ(lint_files({path}, LintOptions{}).size(), 0u) << path;
    auto text = read_script(path);
    ASSERT_TRUE(text) << text.error().message;
    auto headers = parse_script_headers(path, *text);
    ASSERT_TRUE(headers) << headers.error().message;
    EXPECT_EQ(headers->fields.value("preempt", ""), "yield") << path;
  }
}

TEST_F(LintFiles, PlanFindingsIncludeItsScriptsAndGpuCounts) {
  write("train.sh", "#!/bin/bash\n#gpuq gpus=3\nif true; then\n");
  write("plan.json", R"({"jobs": [
  {"id": "train", "script": "train.sh"},
  {"id": "eval", "command": ["true"], "gpus": 1, "bad": 1},
  {"id": "eval", "command": ["true"]}
],
"reservations": [{"gpus": [0, 1, 5], "jobs": ["train"]}]})");
  EXPECT_EQ(
      lint({"plan.json", "train.sh"}, LintOptions{4}),
      (std::vector<std::string>{
          "plan.json:3: error: job 'eval': unknown field 'bad' (see docs/api.md, \"Submit "
          "request\")",
          "plan.json:4: error: duplicate id 'eval' (also at line 3); each job needs its own id",
          "plan.json:6: error: reservation 'r0' names GPU 5; this machine has 4 (indices 0 to 3)",
          "train.sh:4: error: shell syntax: syntax error: unexpected end of file",
      }));
  auto two_gpus = lint({"plan.json"}, LintOptions{2});
  EXPECT_NE(std::find(two_gpus.begin(), two_gpus.end(),
                      "plan.json:2: error: job 'train' asks for 3 GPUs; this machine has 2"),
            two_gpus.end())
      << ::testing::PrintToString(two_gpus);
}

TEST_F(LintFiles, PlanStepsTheirScriptsAndImages) {
  write("prep.sh", "#!/bin/bash\n#gpuq gpus=2\nif true; then\n");
  write("plan.json", R"({"jobs": [
  {"id": "pipe", "steps": [
    {"script": "prep.sh"},
    {"script": "missing.sh"},
    {"argv": ["true"], "image": "Busybox"}]},
  {"id": "none", "steps": []},
  {"id": "img", "image": "no spaces", "command": ["true"]},
  {"id": "gone", "script": "gone.sh"}
]})");
  // A script that cannot be read is reported once, by the plan, not again as a script.
  EXPECT_EQ(
      lint({"plan.json"}),
      (std::vector<std::string>{
          "plan.json:4: error: job 'pipe': steps[1]: no such script missing.sh (script paths "
          "are relative to the plan file's directory)",
          "plan.json:5: error: job 'pipe': steps[2]: field 'image': 'Busybox' is not an image "
          "reference: the path 'Busybox' has capital letters; image paths are lowercase "
          "('busybox'); an image is [HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST], as in busybox, "
          "ubuntu:24.04 or nvcr.io/nvidia/pytorch:24.01-py3",
          "plan.json:6: error: job 'none': \"steps\" must be a non-empty list of steps, each "
          "{\"script\": PATH, \"args\": [...]} or {\"argv\": [\"python\", \"eval.py\"]}",
          "plan.json:7: error: job 'img': field 'image': 'no spaces' is not an image "
          "reference: it holds a space or a control character; an image is "
          "[HOST[:PORT]/]PATH[:TAG][@sha256:DIGEST], as in busybox, ubuntu:24.04 or "
          "nvcr.io/nvidia/pytorch:24.01-py3",
          "plan.json:8: error: job 'gone': no such script gone.sh (script paths are relative "
          "to the plan file's directory)",
          "prep.sh:2: error: gpus= sets the whole job, not one step: set it on the job (gpuq "
          "submit --gpus, or \"gpus\" in a plan's job) and remove it from this step's "
          "script, which may set only name, timeout, done-if and image",
          "prep.sh:4: error: shell syntax: syntax error: unexpected end of file",
      }));
}

TEST_F(LintFiles, ADoneIfInAContainerIsAWarningItRunsOnTheHost) {
  write("step.sh", "#!/bin/bash\n#gpuq image=busybox\n#gpuq done-if='test -s out'\necho\n");
  write("plan.json", R"({"jobs": [
  {"id": "pipe", "image": "ubuntu:24.04", "done_if": "test -s all", "steps": [
    {"argv": ["true"], "done_if": "test -s a"},
    {"argv": ["true"]},
    {"script": "step.sh"}]},
  {"id": "host", "steps": [{"argv": ["true"], "done_if": "test -s b"}]}
]})");
  auto found = lint({"plan.json"});
  ASSERT_EQ(found.size(), 3u) << ::testing::PrintToString(found);
  EXPECT_EQ(found[0],
            "plan.json:2: warning: job 'pipe''s done-if runs on the host before it starts, not in "
            "its container (image ubuntu:24.04): it sees the host's files and commands, not the "
            "image's; test a file the job writes to a directory the host shares, or remove "
            "done-if");
  EXPECT_EQ(found[1].find("plan.json:3: warning: job 'pipe', step 0 (true)'s done-if runs on the "
                          "host before it starts, not in its container (image ubuntu:24.04)"),
            0u)
      << found[1];
  EXPECT_EQ(found[2].find("plan.json:5: warning: job 'pipe', step 2 (step.sh)'s done-if runs on "
                          "the host before it starts, not in its container (image busybox)"),
            0u)
      << found[2];
  // A script on its own: its header's image= and done-if=.
  EXPECT_EQ(lint({"step.sh"}),
            (std::vector<std::string>{
                "step.sh:3: warning: the job's done-if runs on the host before it starts, not in "
                "its container (image busybox): it sees the host's files and commands, not the "
                "image's; test a file the job writes to a directory the host shares, or remove "
                "done-if"}));
  EXPECT_EQ(lint_script((dir_ / "step.sh").string(), {}, ScriptRole::kStep)
                .front()
                .message.find("the step's done-if"),
            0u);
}

TEST_F(LintFiles, WarnsAboutWaitsForUndeclaredOutputs) {
  write("train.sh", "#!/bin/bash\n# gpuq-out: ckpt/\n# gpuq-out: results/eval_*.json\ntrue\n");
  write("eval.sh", "#!/bin/bash\n# REQUIRES=test -f ckpt/READY && test -s data/x.json\ntrue\n");
  write("data/here.json", "{}");
  write("plan.json", R"({"jobs": [
  {"id": "train", "script": "train.sh"},
  {"id": "eval", "script": "eval.sh",
   "deps": ["train",
            "file:results/eval_a.json",
            "file:results/x.json",
            "file:data/here.json"]},
  {"id": "report", "command": ["true"], "requires": ["[ -e out/report.md ]"]}
]})");
  EXPECT_EQ(lint({"plan.json"}),
            (std::vector<std::string>{
                "eval.sh:2: warning: job eval waits for data/x.json (REQUIRES test -f ckpt/READY "
                "&& test -s "
                "data/x.json), which no job in this plan declares as output (# gpuq-out:)",
                "plan.json:6: warning: job eval waits for results/x.json, which no job in this "
                "plan declares as "
                "output (# gpuq-out:)",
                "plan.json:8: warning: job report waits for out/report.md (REQUIRES [ -e "
                "out/report.md ]), which "
                "no job in this plan declares as output (# gpuq-out:)",
            }));
}

TEST(PathsTestedBy, FindsFileTests) {
  EXPECT_EQ(paths_tested_by("test -f ckpt/READY"), std::vector<std::string>{"ckpt/READY"});
  EXPECT_EQ(paths_tested_by("[ -s 'a b' ] && test -d out;test -e x"),
            (std::vector<std::string>{"a b", "out", "x"}));
  EXPECT_EQ(paths_tested_by("[[ -f y ]]"), std::vector<std::string>{"y"});
  EXPECT_EQ(paths_tested_by("! test -f lock"), std::vector<std::string>{});
  EXPECT_EQ(paths_tested_by("curl -sf http://x"), std::vector<std::string>{});
  EXPECT_EQ(paths_tested_by("test -f"), std::vector<std::string>{});
}

}  // namespace
}  // namespace gpuq::spec
