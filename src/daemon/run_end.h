// SPDX-License-Identifier: Apache-2.0
// How a run ended and what becomes of its job: the queue actor's decisions after a shim exits,
// as pure functions of the shim's exit record, the reason the daemon stopped the run (if it
// did), the job's retry budget and the configured backoff. No store, no clock, no processes:
// the actor gathers the facts, calls these, and records what they say. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/job.h"
#include "runner/run_files.h"

namespace gpuq::daemon {

// How a run ended, as the actor records it (runs.outcome, the job's reason, the event's data).
struct RunEnd {
  RunOutcome outcome = RunOutcome::kFailed;
  std::optional<int> exit_code;
  std::optional<int> signal;
  int64_t ended_ms = 0;
  std::string reason;                             // for people: "run 2: exit code 1"
  nlohmann::json data = nlohmann::json::object();  // the event's data
  std::optional<bool> verified;                   // DONE_IF after exit 0
  std::string how;                                // preempted: "yielded" or "stopped"
  // Exit 0 of a job with a DONE_IF: it counts as success only once DONE_IF holds
  // (verify_done_if()).
  bool needs_done_if = false;
  // Why output.log may lack output (the disk filled, or the log reached its cap); "" when whole.
  std::string log_note;
  // A job with steps: what each step of the run did (the exit record's), recorded with the end.
  std::vector<StepRun> steps;
};

// What a run's step record (`seen`: the shim's steps.json or exit.json) says that the store's
// (`recorded`) does not yet: the steps that began and those that ended since, by index, each
// with what was seen of it. Events follow these, so each step's start and end is told once.
struct StepChange {
  StepRun step;
  bool started = false;
  bool finished = false;
};
std::vector<StepChange> step_changes(const std::vector<StepRun>& recorded, const std::vector<StepRun>& seen);

// The steps of a run whose shim left no last word (lost): a step that was running is stopped
// at `ended_ms`.
std::vector<StepRun> steps_of_lost_run(std::vector<StepRun> steps, int64_t ended_ms);

// A job with steps: the step that ended the run without success (failed, timed out or
// stopped), if one did.
const StepRun* step_that_ended_run(const std::vector<StepRun>& steps);

// The run's end from its exit record. `now_ms` stands in for a record without an end time.
// `while_down`: the shim ended while no daemon was watching (said in the event). A job with
// steps names the step that ended the run (`step_names`: each step's, by index): its failure is
// the run's, and a step's own timeout makes the run timed out.
RunEnd judge_run_end(const Run& run, const runner::ExitRecord& record, bool has_done_if,
                     int64_t now_ms, bool while_down, const std::vector<std::string>& step_names = {});

// The end of a run whose exit 0 waited for DONE_IF: `done` says whether it held. A cancel that
// arrived meanwhile wins.
RunEnd verify_done_if(RunEnd end, const Run& run, bool done);

// [retries]: the first delay, the factor applied after each further failure, and the cap.
struct RetryPolicy {
  int64_t delay_ms = 10'000;
  double backoff = 2.0;
  int64_t max_delay_ms = 3'600'000;
};

// The delay before retry number `failed_runs` (1: the first retry): the job's own delay, or
// the policy's when `job_delay_ms` < 0, times backoff^(failed_runs - 1), at most the cap.
int64_t retry_delay_ms(int64_t job_delay_ms, const RetryPolicy& policy, int failed_runs);

// What becomes of a job after one of its runs ended.
struct AfterRun {
  JobState to = JobState::kFailed;
  bool retry = false;       // back to pending after a failed or timed-out run, within budget
  bool preempted = false;   // back to pending in its place; never counts as a failure
  int failed_runs = 0;      // runs that count against `retries`, this one included
  int64_t retry_at_ms = 0;  // when a retry may start
};

// `failed_runs` counts the earlier runs that count against `retries`; `active` is false when
// the job is no longer tracked (it can then only end).
AfterRun decide_after_run(RunOutcome outcome, int failed_runs, int retries, int64_t job_delay_ms,
                          const RetryPolicy& policy, bool active, int64_t now_ms);

// A run whose shim vanished without an exit record (a power cut, a kill -9 of the shim): the
// job is requeued once, unless an earlier run was lost too or the daemon was stopping the run.
struct LostRun {
  bool requeue = false;
  JobState to = JobState::kPending;
  std::string reason;  // the job's, for people
  // Held (decide_unstarted_run): what happened and what a person should do; `reason` says both.
  std::string why;
  std::string fix;
  int not_started_in_a_row = 0;  // decide_unstarted_run: this run and those just before it
};
LostRun decide_lost_run(const Run& run, int earlier_lost_runs);

// How many of a job's `runs` (oldest first) just before run number `number` never began: those
// after the newest run that began.
int not_started_before(const std::vector<Run>& runs, int number);

// A run recorded as started whose job never ran (the daemon died before letting its shim go):
// requeued, since nothing of the job ran, unless it was being cancelled — or unless it is the
// `max_not_started`th such run in a row (`earlier_not_started` never began just before it): the
// job is then held, for a daemon that dies as it starts this job would start it forever, and a
// person should find out why before `gpuq release`.
LostRun decide_unstarted_run(const Run& run, int earlier_not_started, int max_not_started);

}  // namespace gpuq::daemon
