// SPDX-License-Identifier: Apache-2.0
// The JSON shapes of jobs, runs and resources, shared by the API (which writes them) and the
// CLI (which reads them), so that the wire contract of docs/api.md lives in one place.
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "model/job.h"

namespace gpuq {

// {"number","gpus":[indices or names],"started_at","ended_at","exit_code","signal","outcome",
//  "verified","started_at_ms","ended_at_ms","run_id","peak_gpu_mem_mib","preempted_by",
//  "preempt_deadline","log_note","log_incomplete","seen_gpus":[as gpus],"gpu_mismatch"};
//  absent values are null (`preempted_by` is null when no job preempts or preempted the run,
//  `peak_gpu_mem_mib` when the probe saw none). A run of a job with steps adds "first_step"
//  (where it began) and "steps" (model/step.h's records: index, state, started_at_ms, ...,
//  log_offset, and "log_end": where the step's output ends in output.log, null while it runs
//  or when it is the last step the run reached; model/job_steps.h).
//  GET /v1/jobs/{ref} adds "samples".
nlohmann::json run_to_json(const Run& run);

// {"id","name","user","state","priority","gpus_requested","reason","submitted_at","finished_at",
//  "array","command","cwd","runs":[...],...,"preempt","restart_within_ms"}; `array` is the id of
//  the array the job is an element of, null for a job alone; `name` is null when the
//  job has none, `user` for jobs of daemons older than it; `preempt` is "never", "yield" or
//  "restart"; `restart_within_ms` is null when unset. The API may add fields it alone knows,
//  such as "gpu_mem_learned". "steps" lists a job's steps ([] without): each {"index","name",
//  "state","started","ended","exit_code","signal","run","image","log_offset","log_end"} as the
//  newest run that reached it left it ("pending" and nulls before; log_offset and log_end as in
//  that run's steps); "step" is the index of the step running now, or null; "image" the job's
//  container image, or null; "pull" and "container_user" null without any image.
nlohmann::json job_to_json(const Job& job);

// The "steps" of job_to_json.
nlohmann::json job_steps_to_json(const Job& job);

// {"id","name","size","max_running","sweep","submitted_at"} (docs/sweeps.md): `sweep` is what
// was submitted ({"array": "0-9%2"} or {"grid": [...], "max_running": N}); `max_running` is
// null when the array has no cap.
nlohmann::json array_to_json(const JobArray& array);

}  // namespace gpuq
