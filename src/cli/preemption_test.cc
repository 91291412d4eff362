// SPDX-License-Identifier: Apache-2.0
// Preemption through the CLI against a scripted daemon (FakeTransport): `gpuq submit
// --preempt/--restart-within` and the same keys in script headers and plans, `gpuq lint` of
// files that use them, and what `gpuq show` says about preempt modes, preempted runs, peak GPU
// memory and a learned memory footprint.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/fake_transport.h"

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;
using testing::json_answer;

class Preemption : public testing::ScriptedCli {
 protected:
  std::string write(const std::string& name, const std::string& text) const { return dir_.write(name, text); }
  // The body `gpuq submit ARGS` sends (the daemon answers job 7).
  Json submitted(const std::vector<std::string>& args) {
    process_.daemon.requests.clear();
    script({{"/v1/jobs", json_answer(201, job_json(7, "pending"))}});
    EXPECT_EQ(run(args), 0) << err();
    return sent_body();
  }

  static std::string job_json(int id, std::string_view state, std::string_view extra = "",
                              std::string_view runs = "[]") {
    return fmt::format(R"({{"id":{},"name":null,"state":"{}","priority":50,"gpus_requested":1,)"
                       R"("reason":"","submitted_at_ms":1795949700000,"command":"train.sh",)"
                       R"("cwd":"/x","runs":{}{}}})",
                       id, state, runs, extra);
  }

  testing::TempDir dir_;
};

// --- submit ------------------------------------------------------------------------------

TEST_F(Preemption, FlagsMapToTheirFields) {
  Json yield = submitted({"submit", "--preempt", "yield", "--", "python", "train.py"});
  EXPECT_EQ(yield["preempt"], "yield");
  EXPECT_FALSE(yield.contains("restart_within"));

  Json restart =
      submitted({"submit", "--preempt=restart", "--restart-within", "30m", "--", "true"});
  EXPECT_EQ(restart["preempt"], "restart");
  EXPECT_EQ(restart["restart_within"], "30m");

  Json never = submitted({"submit", "--preempt", "never", "--", "true"});
  EXPECT_EQ(never["preempt"], "never");

  Json plain = submitted({"submit", "--", "true"});
  EXPECT_FALSE(plain.contains("preempt"));
  EXPECT_FALSE(plain.contains("restart_within"));
}

TEST_F(Preemption, BadFlagsAreUsageErrors) {
  expect_usage_error({"submit", "--preempt", "sometimes", "--", "true"},
                     "--preempt: bad preempt mode 'sometimes': use yield (the job saves its state "
                     "and exits 75), restart (killed and rerun) or never");
  expect_usage_error({"submit", "--preempt", "", "--", "true"}, "--preempt: bad preempt mode ''");
  expect_usage_error({"submit", "--restart-within", "30m", "--", "true"},
                     "--restart-within needs --preempt restart (the job's preempt mode is never)");
  expect_usage_error({"submit", "--preempt", "yield", "--restart-within", "30m", "--", "true"},
                     "--restart-within needs --preempt restart (the job's preempt mode is yield)");
  expect_usage_error(
      {"submit", "--preempt", "restart", "--restart-within", "soon", "--", "true"},
      "--restart-within: bad duration 'soon'");
  expect_usage_error({"submit", "--preempt", "--", "true"}, "--preempt");
}

TEST_F(Preemption, ScriptHeadersAndFlagsTogether) {
  std::string yield = write("count.sh", "#!/bin/bash\n#gpuq preempt=yield gpus=1\necho\n");
  EXPECT_EQ(submitted({"submit", yield})["preempt"], "yield");
  EXPECT_EQ(submitted({"submit", "--preempt", "never", yield})["preempt"], "never");

  std::string restart =
      write("again.sh", "#!/bin/bash\n#gpuq preempt=restart restart_within=30m\necho\n");
  Json from_header = submitted({"submit", restart});
  EXPECT_EQ(from_header["preempt"], "restart");
  EXPECT_EQ(from_header["restart_within"], "30m");
  EXPECT_EQ(submitted({"submit", "--restart-within", "1h", restart})["restart_within"], "1h");
  expect_usage_error({"submit", "--preempt", "yield", restart},
                     "--preempt yield: the script's header sets restart-within=, which applies "
                     "only to preempt=restart; give --preempt restart or remove restart-within= "
                     "from the header");

  // The header block must be right by itself (as `gpuq lint` sees it), whatever the flags.
  std::string within = write("within.sh", "#!/bin/bash\n#gpuq restart-within=30m\necho\n");
  expect_usage_error({"submit", "--preempt", "restart", within},
                     "within.sh:2: restart-within= applies only to preempt=restart (this "
                     "script's mode is never)");
  std::string bad = write("bad.sh", "#!/bin/bash\n#gpuq preempt=often\necho\n");
  expect_usage_error({"submit", bad}, "bad.sh:2: preempt=often: bad preempt mode 'often'");
}

TEST_F(Preemption, PlansCarryTheKeysAndTakeNoFlags) {
  write("count.sh", "#!/bin/bash\n#gpuq preempt=yield\necho\n");
  std::string plan = write("plan.json", R"({"jobs": [
    {"id": "count", "script": "count.sh"},
    {"id": "train", "command": ["true"], "preempt": "restart", "restart_within": "2h"}]})");
  script({{"/v1/plans", json_answer(200, R"({"jobs":[{"name":"count","id":3,"result":"created"},)"
                                         R"({"name":"train","id":4,"result":"created"}]})")}});
  EXPECT_EQ(run({"submit", plan}), 0) << err();
  Json body = sent_body();
  EXPECT_EQ(body["jobs"][0]["preempt"], "yield");
  EXPECT_EQ(body["jobs"][1]["preempt"], "restart");
  EXPECT_EQ(body["jobs"][1]["restart_within"], "2h");

  expect_usage_error({"submit", "--preempt", "yield", plan}, "--preempt with a plan");
  expect_usage_error({"submit", plan, "--restart-within", "1h"}, "--restart-within with a plan");
  std::string wrong = write("wrong.json", R"([{"id": "a", "command": ["true"],
    "restart_within": "1h"}])");
  expect_usage_error({"submit", wrong},
                     "wrong.json:1: job 'a': 'restart_within' applies only to \"preempt\": "
                     "\"restart\"");
}

TEST_F(Preemption, LintAcceptsThePreemptionKeys) {
  std::string script_path = write("count.sh", "#!/bin/bash\n#gpuq preempt=yield\necho\n");
  std::string plan = write("plan.json", R"([{"id": "a", "script": "count.sh"},
    {"id": "b", "command": ["true"], "preempt": "restart", "restart_within": "10m"}])");
  std::string bad = write("bad.sh", "#!/bin/bash\n#gpuq preempt=yield restart-within=1h\necho\n");
  process_.daemon.handler = nullptr;  // no daemon: lint still works
  EXPECT_EQ(run({"lint", script_path, plan}), 0) << out() << err();
  EXPECT_EQ(out(), "");
  EXPECT_EQ(run({"lint", bad}), kExitFailed);
  EXPECT_NE(out().find("bad.sh:2: error: restart-within= applies only to preempt=restart"),
            std::string::npos)
      << out();
}

// --- show --------------------------------------------------------------------------------

TEST_F(Preemption, ShowsModeRunsPreemptedAndPeakMemory) {
  std::string runs =
      R"([{"number":1,"gpus":[0],"started_at":"2026-11-29T10:00:00.000Z","started_at_ms":1000,)"
      R"("ended_at_ms":61000,"exit_code":75,"signal":null,"outcome":"preempted",)"
      R"("preempted_by":9,"peak_gpu_mem_mib":18000,"run_id":"7-1-ab",)"
      R"("log_note":"the disk was full during the run: output.log may lack output"},)"
      R"({"number":2,"gpus":[1],"started_at":"2026-11-29T10:05:00.000Z","started_at_ms":100000,)"
      R"("ended_at_ms":null,"exit_code":null,"signal":null,"outcome":"running",)"
      R"("preempted_by":12,"peak_gpu_mem_mib":900,"run_id":"7-2-cd"},)"
      R"({"number":3,"gpus":[1],"started_at":"2026-11-29T10:09:00.000Z","started_at_ms":120000,)"
      R"("ended_at_ms":130000,"exit_code":0,"signal":null,"outcome":"succeeded",)"
      R"("preempted_by":null,"peak_gpu_mem_mib":null,"run_id":"7-3-ef"}])";
  script({{"/v1/jobs/7", json_answer(200, job_json(7, "running",
                                                   R"(,"preempt":"yield","restart_within_ms":null)",
                                                   runs))}});
  process_.wall = 145'000;
  EXPECT_EQ(run({"show", "7"}), 0) << err();
  EXPECT_NE(out().find("preempt:    yield\n"), std::string::npos) << out();
  EXPECT_EQ(out().find("gpu memory:"), std::string::npos) << out();
  EXPECT_NE(
      out().find(
          "RUN  GPUS  STARTED                   DURATION  EXIT  OUTCOME                      "
          "GPU MEMORY\n"
          "1    0     2026-11-29T10:00:00.000Z  1m00s     75    preempted by job 9           "
          "peak 17.6 GiB\n"
          "2    1     2026-11-29T10:05:00.000Z  45s       -     running, yielding to job 12  "
          "peak 900 MiB\n"
          "3    1     2026-11-29T10:09:00.000Z  10s       0     succeeded                    -\n"
          "run 1: the disk was full during the run: output.log may lack output\n"),
      std::string::npos)
      << out();
}

TEST_F(Preemption, ShowsRestartWithinAndStopping) {
  std::string runs =
      R"([{"number":1,"gpus":[0],"started_at":"T","started_at_ms":1000,"ended_at_ms":null,)"
      R"("exit_code":null,"signal":null,"outcome":"running","preempted_by":4}])";
  script({{"/v1/jobs/7",
           json_answer(200, job_json(7, "running",
                                     R"(,"preempt":"restart","restart_within_ms":1800000)", runs))}});
  EXPECT_EQ(run({"show", "7"}), 0) << err();
  EXPECT_NE(out().find("preempt:    restart (only while a run is younger than 30m00s)\n"),
            std::string::npos)
      << out();
  EXPECT_NE(out().find("running, stopping for job 4\n"), std::string::npos) << out();
  EXPECT_EQ(out().find("GPU MEMORY"), std::string::npos) << out();  // none measured
}

TEST_F(Preemption, ShowsTheLearnedMemoryFootprint) {
  script({{"/v1/jobs/7",
           json_answer(200, job_json(7, "pending",
                                     R"(,"preempt":"never","gpu_mem_learned":{"mib":18000,"runs":3})"))},
          {"/v1/jobs/8",
           json_answer(200, job_json(8, "pending", R"(,"gpu_mem_learned":{"mib":512,"runs":1})"))}});
  EXPECT_EQ(run({"show", "7"}), 0) << err();
  EXPECT_NE(out().find("\ngpu memory: 18000 MiB learned from 3 successful runs (peak); declare "
                       "--gpu-mem to override\n"),
            std::string::npos)
      << out();
  EXPECT_EQ(out().find("preempt:"), std::string::npos) << out();  // never is not shown
  process_.out.str("");
  EXPECT_EQ(run({"show", "8"}), 0) << err();
  EXPECT_NE(out().find("gpu memory: 512 MiB learned from 1 successful run (peak);"),
            std::string::npos)
      << out();
}

TEST_F(Preemption, ShowWithoutTheNewFieldsLooksAsBefore) {
  std::string runs =
      R"([{"number":1,"gpus":[0],"started_at":"S","started_at_ms":1000,"ended_at_ms":2000,)"
      R"("exit_code":0,"signal":null,"outcome":"succeeded"}])";
  script({{"/v1/jobs/7", json_answer(200, job_json(7, "succeeded", "", runs))}});
  EXPECT_EQ(run({"show", "7"}), 0) << err();
  EXPECT_EQ(out().find("preempt"), std::string::npos) << out();
  EXPECT_EQ(out().find("gpu memory"), std::string::npos) << out();
  EXPECT_NE(out().find("RUN  GPUS  STARTED  DURATION  EXIT  OUTCOME\n"
                       "1    0     S        1s        0     succeeded\n"),
            std::string::npos)
      << out();
}

}  // namespace
}  // namespace gpuq::cli
