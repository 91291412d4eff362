// SPDX-License-Identifier: Apache-2.0
#include "model/job.h"

#include <gtest/gtest.h>

#include "model/json.h"

namespace gpuq {
namespace {

TEST(JobState, NamesRoundTrip) {
  for (auto s : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kSucceeded,
                 JobState::kFailed, JobState::kCancelled, JobState::kBlocked, JobState::kSkipped}) {
    auto parsed = parse_job_state(to_string(s));
    ASSERT_TRUE(parsed);
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_FALSE(parse_job_state("done"));
}

TEST(JobState, TerminalStatesNeverStartAgainByThemselves) {
  EXPECT_FALSE(is_legal_transition(JobState::kSucceeded, JobState::kRunning));
  EXPECT_FALSE(is_legal_transition(JobState::kCancelled, JobState::kRunning));
  EXPECT_TRUE(is_legal_transition(JobState::kPending, JobState::kRunning));
  EXPECT_TRUE(is_legal_transition(JobState::kRunning, JobState::kPending));  // lost run requeued
  EXPECT_TRUE(is_legal_transition(JobState::kRunning, JobState::kHeld));     // runs never began
  EXPECT_FALSE(is_legal_transition(JobState::kHeld, JobState::kRunning));
}

TEST(Priority, NamesAndIntegers) {
  EXPECT_EQ(*parse_priority("high"), 10);
  EXPECT_EQ(*parse_priority("normal"), 50);
  EXPECT_EQ(*parse_priority("low"), 90);
  EXPECT_EQ(*parse_priority("7"), 7);
  EXPECT_FALSE(parse_priority("-1"));
  EXPECT_FALSE(parse_priority("urgent"));
  EXPECT_FALSE(parse_priority("5x"));
}

TEST(JobJson, HasTheContractFields) {
  Job job;
  job.id = 4;
  job.spec.gpus = 2;
  job.spec.argv = {"python", "train.py"};
  gpuq::Run run;
  run.number = 1;
  run.gpus = {"gpu0", "gpu1"};
  run.gpu_indices = {0, 1};
  run.exit_code = 0;
  run.outcome = RunOutcome::kSucceeded;
  job.runs.push_back(run);
  auto j = job_to_json(job);
  for (const char* key : {"id", "name", "state", "priority", "gpus_requested", "reason", "runs"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["name"].is_null());
  EXPECT_EQ(j["command"], "python train.py");
  const auto& r = j["runs"][0];
  for (const char* key :
       {"number", "gpus", "started_at", "ended_at", "exit_code", "signal", "outcome"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  EXPECT_EQ(r["gpus"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(r["outcome"], "succeeded");
  EXPECT_TRUE(r["signal"].is_null());
}

}  // namespace
}  // namespace gpuq
