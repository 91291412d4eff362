// SPDX-License-Identifier: Apache-2.0
// How a run ended, judged from its shim's exit record (run_end.h): here, a fleet run that its
// shim stopped because its claim was not renewed in time.
#include "daemon/run_end.h"

#include <csignal>
#include <gtest/gtest.h>

namespace gpuq::daemon {
namespace {

TEST(RunEnd, AFleetRunStoppedForALapsedClaimIsCancelledWithItsReasonAndNeverRetried) {
  gpuq::Run run;
  run.number = 2;
  runner::ExitRecord record;
  record.signal = SIGTERM;
  record.ended_at_ms = 5'000;
  record.claim_lapsed = "its fleet claim was not renewed by 2026-12-05T10:00:00.000Z";
  RunEnd end = judge_run_end(run, record, /*has_done_if=*/false, 9'000, /*while_down=*/true);
  EXPECT_EQ(end.outcome, RunOutcome::kCancelled);
  EXPECT_EQ(end.reason, "run 2 stopped: " + record.claim_lapsed);
  EXPECT_EQ(end.data.value("claim_lapsed", ""), record.claim_lapsed);
  EXPECT_EQ(end.data.value("while_daemon_down", false), true);
  // Another node may run the job now: this one must not run it again, retries or not.
  AfterRun after = decide_after_run(end.outcome, 0, /*retries=*/3, -1, RetryPolicy{}, true, 9'000);
  EXPECT_EQ(after.to, JobState::kCancelled);
  EXPECT_FALSE(after.retry);
}

TEST(RunEnd, ARunWithoutALapsedClaimIsJudgedAsBefore) {
  gpuq::Run run;
  run.number = 1;
  runner::ExitRecord record;
  record.signal = SIGTERM;
  RunEnd end = judge_run_end(run, record, false, 9'000, false);
  EXPECT_EQ(end.outcome, RunOutcome::kFailed);
  EXPECT_FALSE(end.data.contains("claim_lapsed"));
}

}  // namespace
}  // namespace gpuq::daemon
