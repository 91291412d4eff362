// SPDX-License-Identifier: Apache-2.0
// The preemption and GPU-memory fields of the job and run JSON (docs/api.md, "Objects").
#include "model/json.h"

#include <gtest/gtest.h>

namespace gpuq {
namespace {

using nlohmann::json;

Job job_with_one_run() {
  Job job;
  job.id = 4;
  job.spec.argv = {"python", "train.py"};
  gpuq::Run run;
  run.number = 1;
  run.outcome = RunOutcome::kSucceeded;
  run.exit_code = 0;
  job.runs.push_back(run);
  return job;
}

TEST(JobJson, PreemptionFieldsDefaultToNeverAndNull) {
  json j = job_to_json(job_with_one_run());
  EXPECT_EQ(j["preempt"], "never");
  EXPECT_TRUE(j.contains("restart_within_ms"));
  EXPECT_TRUE(j["restart_within_ms"].is_null());
  const json& run = j["runs"][0];
  for (const char* key : {"run_id", "peak_gpu_mem_mib", "preempted_by", "preempt_deadline"}) {
    ASSERT_TRUE(run.contains(key)) << key;
    EXPECT_TRUE(run[key].is_null()) << key << " = " << run[key];
  }
}

TEST(JobJson, PreemptionFieldsWhenSet) {
  Job job = job_with_one_run();
  job.spec.preempt = PreemptMode::kRestart;
  job.spec.restart_within_ms = 1'800'000;
  gpuq::Run& run = job.runs[0];
  run.outcome = RunOutcome::kPreempted;
  run.exit_code = kYieldExitCode;
  run.run_id = "4-1-a1b2c3";
  run.peak_gpu_mem_mib = 18'000;
  run.preempted_by = 9;
  run.preempt_deadline_ms = 1'795'949'736'123;
  json j = job_to_json(job);
  EXPECT_EQ(j["preempt"], "restart");
  EXPECT_EQ(j["restart_within_ms"], 1'800'000);
  const json& r = j["runs"][0];
  EXPECT_EQ(r["outcome"], "preempted");
  EXPECT_EQ(r["exit_code"], 75);
  EXPECT_EQ(r["run_id"], "4-1-a1b2c3");
  EXPECT_EQ(r["peak_gpu_mem_mib"], 18'000);
  EXPECT_EQ(r["preempted_by"], 9);
  EXPECT_EQ(r["preempt_deadline"], "2026-11-29T10:55:36.123Z");

  job.spec.preempt = PreemptMode::kYield;
  job.spec.restart_within_ms = 0;
  job.runs[0].peak_gpu_mem_mib = 0;  // measured, and nothing used: 0, not unknown
  j = job_to_json(job);
  EXPECT_EQ(j["preempt"], "yield");
  EXPECT_TRUE(j["restart_within_ms"].is_null());
  EXPECT_EQ(j["runs"][0]["peak_gpu_mem_mib"], 0);
}

TEST(JobJson, UserAndTheGpusARunWasSeenOn) {
  Job job;
  job.id = 5;
  gpuq::Run run;
  run.number = 1;
  run.gpus = {"gpu0", "gpu1"};
  run.gpu_indices = {0, 1};
  job.runs.push_back(run);
  json j = job_to_json(job);
  EXPECT_TRUE(j["user"].is_null()) << "a job of an older daemon";
  EXPECT_EQ(j["runs"][0]["seen_gpus"], json::array());
  EXPECT_EQ(j["runs"][0]["gpu_mismatch"], false);

  job.spec.user = "ann";
  job.runs[0].seen_gpus = {"gpu1"};
  job.runs[0].seen_gpu_indices = {1};
  j = job_to_json(job);
  EXPECT_EQ(j["user"], "ann");
  EXPECT_EQ(j["runs"][0]["seen_gpus"], json::parse("[1]"));
  EXPECT_EQ(j["runs"][0]["gpu_mismatch"], false);

  job.runs[0].seen_gpus = {"gpu1", "gpu3"};
  job.runs[0].seen_gpu_indices = {1, 3};
  EXPECT_EQ(job_to_json(job)["runs"][0]["gpu_mismatch"], true);
  // On the stand-in lane (no index) both are names.
  job.runs[0].gpus = {"gpu0"};
  job.runs[0].gpu_indices = {};
  job.runs[0].seen_gpus = {"gpu0"};
  job.runs[0].seen_gpu_indices = {};
  j = job_to_json(job);
  EXPECT_EQ(j["runs"][0]["seen_gpus"], json::parse(R"(["gpu0"])"));
  EXPECT_EQ(j["runs"][0]["gpu_mismatch"], false);
}

}  // namespace
}  // namespace gpuq
