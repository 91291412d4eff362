// The JSON shapes of jobs, runs and resources, shared by the API (which writes them) and the
// CLI (which reads them), so that the wire contract of docs/api.md lives in one place.
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "model/job.h"

namespace gpuq {

// {"number","gpus":[indices or names],"started_at","ended_at","exit_code","signal","outcome",
//  "duration_ms"}; absent values are null.
nlohmann::json run_to_json(const Run& run);

// {"id","name","state","priority","gpus_requested","reason","submitted_at","finished_at",
//  "command","cwd","runs":[...]}; `name` is null when the job has none.
nlohmann::json job_to_json(const Job& job);

}  // namespace gpuq
