// SPDX-License-Identifier: Apache-2.0
// The run environment contract of docs/jobs.md: what a job sees besides the environment it
// was submitted with (CUDA_VISIBLE_DEVICES, GPUQ_JOB_ID, ...), and the argv that runs a job's
// script snapshot. Pure functions; thread-safe.
#pragma once

#include <map>
#include <utility>
#include <string>
#include <vector>

#include "model/job.h"
#include "model/run_variables.h"

namespace gpuq::runner {

struct RunContext {
  int64_t job_id = 0;
  int run_number = 1;
  std::string job_dir;
  std::string run_dir;
  std::string run_id;                   // the cleanup marker, unique per run
  std::vector<const Resource*> held;    // resources the run holds
  bool resume = false;                  // a later run of a preempted job
  int64_t array_id = 0;                 // the job's array (GPUQ_ARRAY_ID); 0 for a job alone
};

// The job's submitted environment plus the run variables.
std::map<std::string, std::string> build_run_env(const JobSpec& spec, const RunContext& context);

// The path of a job's script snapshot inside its job directory.
std::string script_snapshot_path(const std::string& job_dir);

// argv for the run: the command, or the script snapshot (executed directly when it has a
// #! line, else by bash) followed by its arguments.
std::vector<std::string> run_argv(const JobSpec& spec, const std::string& job_dir);

// The snapshot of step `index`'s script inside the job directory.
std::string step_script_snapshot_path(const std::string& job_dir, int index);

// The scripts a job keeps in its directory, as {path, text}: its script, or each script
// step's; none for a command.
std::vector<std::pair<std::string, std::string>> script_snapshots(const JobSpec& spec,
                                                                  const std::string& job_dir);

// The steps as the run's shim runs them (RunSpec::steps): each step's command, or its script
// snapshot as run_argv runs a job's; empty for a job without steps.
std::vector<StepSpec> run_steps(const JobSpec& spec, const std::string& job_dir);

}  // namespace gpuq::runner
