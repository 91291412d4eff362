// SPDX-License-Identifier: Apache-2.0
#include "spec/headers.h"

#include <gtest/gtest.h>

namespace gpuq::spec {
namespace {

using nlohmann::json;

json fields_of(const std::string& text) {
  auto parsed = parse_script_headers("job.sh", text);
  EXPECT_TRUE(parsed) << parsed.error().message;
  return parsed ? parsed->fields : json();
}

std::string error_of(const std::string& text) {
  auto parsed = parse_script_headers("job.sh", text);
  EXPECT_FALSE(parsed) << "parsed: " << (parsed ? parsed->fields.dump() : "");
  return parsed ? "" : parsed.error().message;
}

TEST(Headers, TheDesignExample) {
  auto parsed = parse_script_headers(
      "eval.sh",
      "#!/bin/bash\n"
      "#gpuq gpus=2 priority=high est=3h timeout=12h retries=2\n"
      "#gpuq after=train-a15 requires=\"test -f ckpt/READY\" done_if=\"test -s out/eval.json\"\n"
      "#gpuq lane=net name=eval-a15\n"
      "# gpuq-in:  results-loop/mbpp_data.json\n"
      "# gpuq-out: results-loop/eval_*.json\n"
      "\n"
      "python eval.py\n");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->fields, json::parse(R"({
    "gpus": 2, "priority": "high", "est": "3h", "timeout": "12h", "retries": 2,
    "after": ["train-a15"], "requires": ["test -f ckpt/READY"], "done_if": "test -s out/eval.json",
    "lanes": ["net"], "name": "eval-a15",
    "inputs": ["results-loop/mbpp_data.json"], "outputs": ["results-loop/eval_*.json"]})"));
  EXPECT_EQ(parsed->lines.at("gpus"), 2);
  EXPECT_EQ(parsed->lines.at("after"), 3);
  EXPECT_EQ(parsed->lines.at("name"), 4);
  EXPECT_EQ(parsed->lines.at("inputs"), 5);
  EXPECT_EQ(parsed->lines.at("outputs"), 6);
}

TEST(Headers, EveryKey) {
  json f = fields_of(
      "#gpuq name=n1 gpus=0 priority=7\n"
      "#gpuq after=a,b after-any=c after-notok=d,e\n"
      "#gpuq requires='test -d x' requires=true\n"
      "#gpuq done-if=false wait-file=ckpt/READY wait-file=data/x\n"
      "#gpuq lane=net,cpu lane=disk retries=3 retry-delay=30s\n"
      "#gpuq timeout=1h est=90m gpu-mem=16000 share\n"
      "#gpuq not-before=2026-11-29T10:00:00Z hold\n"
      "run\n");
  EXPECT_EQ(f, json::parse(R"({
    "name": "n1", "gpus": 0, "priority": 7, "after": ["a", "b"], "after_any": ["c"],
    "after_notok": ["d", "e"], "requires": ["test -d x", "true"], "done_if": "false",
    "wait_file": ["ckpt/READY", "data/x"], "lanes": ["net", "cpu", "disk"], "retries": 3,
    "retry_delay": "30s", "timeout": "1h", "est": "90m", "gpu_mem": 16000, "share": true,
    "not_before": "2026-11-29T10:00:00Z", "hold": true})"));
}

TEST(Headers, ValueForms) {
  EXPECT_EQ(fields_of("#gpuq share=false hold=true not-before=1795949736123\nx\n"),
            json::parse(R"({"share": false, "hold": true, "not_before": 1795949736123})"));
  EXPECT_EQ(fields_of("#gpuq priority=low\n")["priority"], "low");
  // The request spelling with '_' and `lanes` are accepted too.
  EXPECT_EQ(fields_of("#gpuq done_if=true lanes=net after_any=x\n"),
            json::parse(R"({"done_if": "true", "lanes": ["net"], "after_any": ["x"]})"));
}

TEST(Headers, Quoting) {
  json f = fields_of(
      "#gpuq requires=\"test -f \\\"a b\\\"\" done-if='echo \"$X\" \\n'\n"
      "#gpuq wait-file=a\\ b\\ c wait-file=\"sp ace\"/tail  # a trailing comment\n");
  EXPECT_EQ(f["requires"], json({"test -f \"a b\""}));
  EXPECT_EQ(f["done_if"], "echo \"$X\" \\n");
  EXPECT_EQ(f["wait_file"], json({"a b c", "sp ace/tail"}));
  EXPECT_EQ(error_of("#gpuq name=a\\ b\n"),
            "job.sh:1: bad job name 'a b': use letters, digits, '-', '_' or '.', "
            "not only digits (numbers are job ids)");
}

TEST(Headers, CompatibilityForms) {
  auto parsed = parse_script_headers("old.sh",
                                     "#!/bin/bash\n"
                                     "# LANE=net\n"
                                     "# REQUIRES=test -f ckpt/READY && test -s x\n"
                                     "#REQUIRES = \"test -d 'a b'\"\n"
                                     "# DONE_IF= test -s out.json \n"
                                     "# RETRIES = 2\n"
                                     "# lane=ignored: lower case is an ordinary comment\n"
                                     "# LANES=also an ordinary comment\n"
                                     "echo hi\n");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->fields, json::parse(R"({"lanes": ["net"],
    "requires": ["test -f ckpt/READY && test -s x", "test -d 'a b'"],
    "done_if": "test -s out.json", "retries": 2})"));
  EXPECT_EQ(parsed->lines.at("requires"), 3);
  EXPECT_EQ(parsed->item_lines.at("requires"), (std::vector<int>{3, 4}));
  EXPECT_EQ(parsed->lines.at("retries"), 6);
}

TEST(Headers, InputsAndOutputs) {
  json f = fields_of(
      "# gpuq-in: data/a.json\n"
      "#gpuq-in:data/b.json\n"
      "# gpuq-out: results/eval_*.json\n"
      "# gpuq-out: \"out dir/x\"\n"
      "python x.py\n");
  EXPECT_EQ(f["inputs"], json({"data/a.json", "data/b.json"}));
  EXPECT_EQ(f["outputs"], json({"results/eval_*.json", "out dir/x"}));
}

// A line may name several paths, as shell words; a quoted path may hold spaces.
TEST(Headers, AnInOrOutLineNamesOneOrMorePaths) {
  auto parsed = parse_script_headers(
      "job.sh",
      "# gpuq-in: results-loop/mbpp_data.json results-loop/tokenizer.json\n"
      "# gpuq-out: ckpt/a15/ 'eval dir/a15.json'   results-loop/eval_*.json\n"
      "python x.py\n");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->fields["inputs"],
            json({"results-loop/mbpp_data.json", "results-loop/tokenizer.json"}));
  EXPECT_EQ(parsed->fields["outputs"],
            json({"ckpt/a15/", "eval dir/a15.json", "results-loop/eval_*.json"}));
  EXPECT_EQ(parsed->item_lines.at("inputs"), (std::vector<int>{1, 1}));
  EXPECT_EQ(parsed->item_lines.at("outputs"), (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(error_of("# gpuq-out: 'ckpt\n"),
            "job.sh:1: # gpuq-out: unbalanced single quote in 'ckpt; close it on the same line");
  EXPECT_EQ(error_of("# gpuq-in: a ''\n").substr(0, 33), "job.sh:1: # gpuq-in: needs a path");
}

// The queues people move from read # LANE=, # REQUIRES=, # DONE_IF=, # RETRIES=, # gpuq-in: and
// # gpuq-out: wherever they stand: so does gpuq, at the start of a line below the first command
// too (an indented one is in a heredoc or a function, and stays a comment).
TEST(Headers, TheFormsOfOtherQueuesAreReadBelowTheFirstCommandToo) {
  auto parsed = parse_script_headers("job.sh",
                                     "#!/bin/bash\n"
                                     "set -euo pipefail\n"
                                     "# LANE=net\n"
                                     "# RETRIES=2\n"
                                     "cd \"$HOME\"\n"
                                     "# REQUIRES=test -f data/READY\n"
                                     "# gpuq-out: data/\n"
                                     "f() {\n"
                                     "  # DONE_IF=never read: indented\n"
                                     "}\n");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->fields, json::parse(R"({"lanes": ["net"], "retries": 2,
    "requires": ["test -f data/READY"], "outputs": ["data/"]})"));
  EXPECT_EQ(parsed->lines.at("lanes"), 3);
  EXPECT_EQ(parsed->lines.at("requires"), 6);
  EXPECT_EQ(parsed->lines.at("outputs"), 7);
  EXPECT_EQ(error_of("set -e\n# RETRIES=1\n# RETRIES=2\n"),
            "job.sh:3: 'retries' is already set at line 2; set it once");
}

// `# LANE=gpu` is the GPU lane (it reaches the spec as written: spec_from_json takes it out of
// the lanes and gives the job a GPU); gpus=0 beside it is a contradiction, at the gpus line.
TEST(Headers, TheGpuLaneIsReadAndGpusZeroBesideItIsAnError) {
  EXPECT_EQ(fields_of("#!/bin/bash\n# LANE=gpu\npython train.py\n"),
            json::parse(R"({"lanes": ["gpu"]})"));
  EXPECT_EQ(fields_of("#gpuq gpus=2\n# LANE=gpu\n"), json::parse(R"({"lanes": ["gpu"], "gpus": 2})"));
  EXPECT_EQ(error_of("#gpuq gpus=0\n# LANE=gpu\n"),
            "job.sh:1: gpus=0, and line 2 puts the job in lane gpu, the GPU lane, whose jobs hold "
            "a GPU: remove one of them");
}

TEST(Headers, ResumeNoTurnsOffAFleetJobsResume) {
  EXPECT_EQ(fields_of("# gpuq-out: ckpt/*.pt\n# gpuq-resume: no\npython x.py\n")["resume"], false);
  EXPECT_EQ(fields_of("#gpuq-resume:yes\n")["resume"], true);
  EXPECT_FALSE(fields_of("# gpuq-out: x\n").contains("resume")) << "resume is the default";
}

TEST(Headers, HeaderBlockEndsAtTheFirstCommand) {
  json f = fields_of(
      "#!/usr/bin/env python3\n"
      "\n"
      "# a comment\n"
      "  #gpuq gpus=1\n"
      "# gpuq retries=1\n"
      "import os\n"
      "# an ordinary comment below: fine\n"
      "    #gpuq indented below the header (a heredoc or function): not a directive\n");
  EXPECT_EQ(f, json::parse(R"({"gpus": 1, "retries": 1})"));
  EXPECT_EQ(fields_of("echo no headers\n"), json::object());
  EXPECT_EQ(fields_of("#!/bin/sh\r\n#gpuq gpus=1\r\necho\r\n"), json::parse(R"({"gpus": 1})"));
}

TEST(Headers, Errors) {
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq gpu=2\n"),
            "job.sh:2: unknown directive 'gpu' in #gpuq line; did you mean 'gpus'? known: name, "
            "gpus, priority, "
            "after, after-any, after-notok, requires, done-if, wait-file, lane, retries, "
            "retry-delay, timeout, "
            "est, gpu-mem, share, not-before, hold, preempt, restart-within, requires-warn, quiet, "
            "warn-after, array, grid, max-running, image, pull, container-user");
  EXPECT_EQ(error_of("#gpuq gpus=two\n"),
            "job.sh:1: gpus=two is not a whole number; write it as gpus=2");
  EXPECT_EQ(error_of("#gpuq gpus=-1\n"),
            "job.sh:1: gpus=-1 is out of range; it must be between 0 and 1024");
  EXPECT_EQ(error_of("#gpuq retries=1.5\n"),
            "job.sh:1: retries=1.5 is not a whole number; write it as retries=2");
  EXPECT_EQ(error_of("#\n#gpuq requires=\"test -f x\n"),
            "job.sh:2: #gpuq line: unbalanced double quote in requires=\"test -f x; close it on "
            "the same line");
  EXPECT_EQ(
      error_of("#gpuq done-if='x\n"),
      "job.sh:1: #gpuq line: unbalanced single quote in done-if='x; close it on the same line");
  EXPECT_EQ(error_of("#!/bin/bash\nset -e\n#gpuq gpus=1\n"),
            "job.sh:3: gpuq directive below the header block (the first command is at line 2); "
            "gpuq reads its own directives (#gpuq, # gpuq-resume:) only from the comment lines at "
            "the top of the script: move this line above line 2");
  EXPECT_EQ(error_of("set -e\n# gpuq-resume: no\n").substr(0, 47),
            "job.sh:2: gpuq directive below the header block");
  EXPECT_EQ(error_of("#gpuq gpus=1\n# RETRIES=1\n#gpuq gpus=2\n"),
            "job.sh:3: 'gpus' is already set at line 1; set it once");
  EXPECT_EQ(error_of("#gpuq retries=1\n# RETRIES=2\n"),
            "job.sh:2: 'retries' is already set at line 1; set it once");
  EXPECT_EQ(error_of("#gpuq gpus\n"), "job.sh:1: 'gpus' needs a value, as in gpus=2");
  EXPECT_EQ(error_of("#gpuq name=\n"),
            "job.sh:1: 'name' has an empty value; write it as name=\"...\"");
  EXPECT_EQ(error_of("#gpuq =3\n").substr(0, 37), "job.sh:1: '=3' has no key; write key=");
  EXPECT_EQ(error_of("#gpuq after=a,,b\n"),
            "job.sh:1: after=a,,b has an empty entry; remove the extra comma");
  EXPECT_EQ(error_of("#gpuq est=3hours\n").substr(0, 47),
            "job.sh:1: est=bad duration '3hours': unknown un");
  EXPECT_EQ(error_of("#gpuq priority=urgent\n").substr(0, 34),
            "job.sh:1: priority=urgent: bad pri");
  EXPECT_EQ(error_of("#gpuq share=maybe\n"),
            "job.sh:1: share=maybe is not true or false; write just 'share' to turn it on");
  EXPECT_EQ(error_of("#gpuq not-before=tomorrow\n").substr(0, 37),
            "job.sh:1: not-before=tomorrow: bad ti");
  // Accepted here but refused by every submit (its stored form would not read back).
  EXPECT_EQ(error_of("#gpuq not-before=1969-12-31T23:00:00Z\n"),
            "job.sh:1: field 'not_before' is 1969-12-31T23:00:00Z; it must be after 1970 and "
            "before 2100-01-01T00:00:00Z");
  EXPECT_EQ(error_of("# RETRIES=x\n"),
            "job.sh:1: # RETRIES=x is not a whole number; write it as retries=2");
  EXPECT_EQ(error_of("# gpuq-in:\n"),
            "job.sh:1: # gpuq-in: needs a path, as in '# gpuq-in: results/eval_*.json' (several: "
            "separate them with spaces, and quote a path that holds one)");
  EXPECT_EQ(error_of("# gpuq-output: x\n"),
            "job.sh:1: unknown gpuq directive '#gpuq-output: x'; use '#gpuq key=value', '# "
            "gpuq-in: PATH', "
            "'# gpuq-out: PATH' or '# gpuq-resume: no'");
  EXPECT_EQ(error_of("# gpuq-resume: never\n"), "job.sh:1: # gpuq-resume: takes 'no' or 'yes', not 'never'");
  EXPECT_EQ(error_of("# gpuq-resume: no\n# gpuq-resume: yes\n"),
            "job.sh:2: # gpuq-resume: is already set at line 1; set it once");
}

TEST(Headers, Preemption) {
  EXPECT_EQ(fields_of("#!/bin/bash\n#gpuq preempt=yield\necho\n"),
            json::parse(R"({"preempt": "yield"})"));
  EXPECT_EQ(fields_of("#gpuq preempt=never\n"), json::parse(R"({"preempt": "never"})"));
  EXPECT_EQ(fields_of("#gpuq quiet=30m requires-warn=2h warn-after=90m\n"),
            json::parse(R"({"quiet": "30m", "requires_warn": "2h", "warn_after": "90m"})"));
  EXPECT_EQ(error_of("#gpuq quiet=soon\n").rfind("job.sh:1: quiet=bad duration 'soon': it does not start", 0), 0u);
  EXPECT_EQ(fields_of("#gpuq preempt=restart restart_within=30m\n"),
            json::parse(R"({"preempt": "restart", "restart_within": "30m"})"));
  // Either order and either spelling, over several lines.
  auto parsed = parse_script_headers("job.sh",
                                     "#!/bin/bash\n"
                                     "#gpuq restart-within=2h\n"
                                     "#gpuq gpus=1 preempt=restart\n"
                                     "run\n");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->fields["restart_within"], "2h");
  EXPECT_EQ(parsed->lines.at("restart_within"), 2);
  EXPECT_EQ(parsed->lines.at("preempt"), 3);
  // A python script's header lines are comments in python too.
  EXPECT_EQ(fields_of("#!/usr/bin/env python3\n#gpuq preempt=yield gpus=1\nimport os\n"),
            json::parse(R"({"preempt": "yield", "gpus": 1})"));
}

TEST(Headers, PreemptionErrors) {
  EXPECT_EQ(error_of("#gpuq preempt=sometimes\n"),
            "job.sh:1: preempt=sometimes: bad preempt mode 'sometimes': use yield (the job saves "
            "its state and exits 75), restart (killed and rerun) or never");
  EXPECT_EQ(error_of("#gpuq preempt\n"),
            "job.sh:1: 'preempt' needs a value, as in preempt=yield (or restart, or never)");
  EXPECT_EQ(error_of("#gpuq preempt=yield\n#gpuq preempt=restart\n"),
            "job.sh:2: 'preempt' is already set at line 1; set it once");
  EXPECT_EQ(error_of("#gpuq preempt=restart restart-within=soon\n"),
            "job.sh:1: restart-within=bad duration 'soon': it does not start with a number; use "
            "forms like 250ms, 45s, 1.5h, 3m12s, 2h30m, 1d or a number of seconds");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq restart_within=30m\n"),
            "job.sh:2: restart-within= applies only to preempt=restart (this script's mode is "
            "never); add preempt=restart or remove restart-within=");
  EXPECT_EQ(error_of("#gpuq preempt=yield\n#gpuq restart-within=30m\n"),
            "job.sh:2: restart-within= applies only to preempt=restart (this script's mode is "
            "yield); add preempt=restart or remove restart-within=");
  // A bad mode is reported once, not again as a mismatch with restart-within=.
  HeaderScan scan = scan_script_headers("job.sh", "#gpuq preempt=later restart-within=1h\n");
  ASSERT_EQ(scan.errors.size(), 1u);
  EXPECT_EQ(scan.errors[0].message.substr(0, 15), "preempt=later: ");
}

TEST(Headers, RefusesEmptyAndBinaryScripts) {
  EXPECT_EQ(error_of("\n\n").substr(0, 26), "job.sh: script is empty; a");
  EXPECT_EQ(error_of(std::string("#!/bin/sh\n\0x", 12)).substr(0, 42),
            "job.sh:2: script contains a NUL byte: it l");
  HeaderScan scan = scan_script_headers("job.sh", std::string("a\0", 2));
  ASSERT_EQ(scan.errors.size(), 1u);
  EXPECT_EQ(scan.errors[0].line, 1);
  EXPECT_EQ(scan.errors[0].file, "job.sh");
}

TEST(Headers, ScanReportsEveryErrorAndKeepsTheGoodFields) {
  HeaderScan scan = scan_script_headers("job.sh",
                                        "#gpuq gpus=1 gpu=2 retries=x\n"
                                        "#gpuq lane=net \"unbalanced\n"
                                        "# LANE=cpu\n"
                                        "echo\n"
                                        "#gpuq hold\n");
  std::vector<std::string> texts;
  for (const auto& d : scan.errors) texts.push_back(d.text().substr(0, 30));
  EXPECT_EQ(texts, (std::vector<std::string>{
                       "job.sh:1: error: unknown direc", "job.sh:1: error: retries=x is ",
                       "job.sh:2: error: #gpuq line: u", "job.sh:5: error: gpuq directiv"}));
  EXPECT_EQ(scan.headers.fields, json::parse(R"({"gpus": 1, "lanes": ["cpu"]})"));
}

}  // namespace
}  // namespace gpuq::spec

namespace gpuq::spec {
namespace {

TEST(HeaderSweeps, ArrayGridAndMaxRunningMakeTheScriptsSweep) {
  auto array = scan_script_headers("job.sh", "#!/bin/bash\n#gpuq array=0-9%2\necho {i}\n");
  EXPECT_TRUE(array.errors.empty()) << array.errors.front().text();
  EXPECT_EQ(array.headers.fields, json::parse(R"({"array": "0-9%2"})"));
  ASSERT_TRUE(array.sweep);
  EXPECT_EQ(array.sweep->size(), 10u);
  EXPECT_EQ(array.sweep->max_running, 2);

  auto grid = scan_script_headers(
      "job.sh", "#!/bin/bash\n#gpuq grid=lr=1e-4,3e-4\n#gpuq grid=seed=0..4 max_running=4\necho\n");
  EXPECT_TRUE(grid.errors.empty()) << grid.errors.front().text();
  EXPECT_EQ(grid.headers.fields,
            json::parse(R"({"grid": ["lr=1e-4,3e-4", "seed=0..4"], "max_running": 4})"));
  EXPECT_EQ(grid.headers.item_lines.at("grid"), (std::vector<int>{2, 3}));
  ASSERT_TRUE(grid.sweep);
  EXPECT_EQ(grid.sweep->size(), 10u);
  EXPECT_EQ(grid.sweep->max_running, 4);

  EXPECT_FALSE(scan_script_headers("job.sh", "#!/bin/bash\n#gpuq gpus=1\necho\n").sweep);
}

TEST(HeaderSweeps, EveryBadSweepHeaderIsAnErrorAtItsLine) {
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq array=9-0\necho\n"),
            "job.sh:2: array=9-0: --array range '9-0' ends before it starts; write 0-9");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq grid=lr\necho\n").substr(0, 21), "job.sh:2: grid=lr: --");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq array=0-3\n#gpuq grid=lr=1,2\necho\n"),
            "job.sh:3: array= and grid=: give one (a grid's elements are numbered as an array's)");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq max-running=2\necho\n"),
            "job.sh:2: max-running= caps how many elements of a job array or grid run at once; "
            "add array= or grid=, or remove it");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq array=0-3%2\n#gpuq max_running=3\necho\n"),
            "job.sh:3: array= says %2 and max-running= 3; give one");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq grid=lr=1,2\n#gpuq grid=lr=3\necho\n"),
            "job.sh:2: grid=: --grid lr is given twice; give each parameter once, with all its "
            "values");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq max-running=0 array=0-3\necho\n"),
            "job.sh:2: max-running=0 is out of range; it must be between 1 and 1000000");
  EXPECT_EQ(error_of("#!/bin/bash\n#gpuq array=0-3\n#gpuq array=0-4\necho\n"),
            "job.sh:3: 'array' is already set at line 2; set it once");
}

}  // namespace
}  // namespace gpuq::spec
