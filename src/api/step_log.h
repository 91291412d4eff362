// SPDX-License-Identifier: Apache-2.0
// GET /v1/jobs/{ref}/log?step=N (docs/api.md, "Log"): which bytes of which run's output.log
// hold step N's output. The run is the one asked for (`run=R`), else the newest run that
// reached the step; the bytes are those from the step's log_offset to where the next step of
// that run began, or to the end of the log (model/job_steps.h). A pure decision over the job as
// the store has it: the handler reads the file. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "model/job.h"

namespace gpuq::api {

struct StepSlice {
  int run = 0;                    // the run whose output.log holds it; 0: none reached it yet
  std::string state = "pending";  // the step's state in that run (model/step.h's names)
  int64_t begin = 0;              // its first byte in output.log
  std::optional<int64_t> end;     // one past its last; nullopt: to the end of the log
};

// Where step `step` (0-based, as in the job's "steps") of `job` lies. Errors name the job, its
// steps and the fix: kInvalidArgument for a job without steps or a step it does not have;
// kNotFound for a run `run` the job does not have, or one that ended without reaching the step.
Result<StepSlice> step_slice(const Job& job, int step, std::optional<int> run);

// The bytes of a slice that a read at `offset` (counted from the slice's start) of at most
// `limit` bytes takes, in a log of `log_size` bytes now: [first, first + count). `size` is the
// slice's length now (the X-Gpuq-Log-Size of a step).
struct SliceRead {
  int64_t first = 0;
  int64_t count = 0;
  int64_t size = 0;
};
SliceRead read_in_slice(const StepSlice& slice, int64_t log_size, int64_t offset, int64_t limit);

}  // namespace gpuq::api
