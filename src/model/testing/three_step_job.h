// SPDX-License-Identifier: Apache-2.0
// A job of three steps as tests of the code that reads a job's steps across its runs use it
// (model/job_steps.h, api/step_log.h): run 1 did step 0 (output bytes 0-3) and failed in step 1
// (from byte 4 on; step 2 not reached); run 2 resumed at step 1 and is running it. Header only;
// for tests.
#pragma once

#include <cstdint>

#include "model/job.h"
#include "model/step.h"

namespace gpuq::testing {

// What step `index` of a run did, in `state`, its output from `log_offset` on.
inline StepRun step_run(int index, StepState state, int64_t log_offset) {
  StepRun s;
  s.index = index;
  s.state = state;
  if (state != StepState::kPending) s.started_at_ms = 1000 + index;
  if (state != StepState::kPending && state != StepState::kRunning) s.ended_at_ms = 2000 + index;
  s.log_offset = log_offset;
  if (state == StepState::kSucceeded) s.exit_code = 0;
  if (state == StepState::kFailed) s.exit_code = 3;
  return s;
}

// Steps s0, s1, s2 as above; job 9, running.
inline Job three_step_job() {
  Job job;
  job.id = 9;
  job.state = JobState::kRunning;
  for (const char* name : {"s0", "s1", "s2"}) {
    JobStep s;
    s.name = name;
    s.argv = {"true"};
    job.spec.steps.push_back(s);
  }
  Run first;
  first.number = 1;
  first.outcome = RunOutcome::kFailed;
  first.steps = {step_run(0, StepState::kSucceeded, 0), step_run(1, StepState::kFailed, 4),
                 step_run(2, StepState::kPending, 0)};
  Run second;
  second.number = 2;
  second.outcome = RunOutcome::kRunning;
  second.first_step = 1;
  second.steps = {step_run(1, StepState::kRunning, 0), step_run(2, StepState::kPending, 0)};
  job.runs = {first, second};
  return job;
}

}  // namespace gpuq::testing
