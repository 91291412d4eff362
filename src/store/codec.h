// SPDX-License-Identifier: Apache-2.0
// How a JobSpec and a run's GPU list are written into the store's TEXT columns (JSON), and
// read back. Private to the store module. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/job.h"

namespace gpuq::store {

// The stored form of a spec is model/spec_json.h's.
std::string encode_spec(const JobSpec& spec);
Result<JobSpec> decode_spec(const std::string& text);
std::string encode_strings(const std::vector<std::string>& values);
std::vector<std::string> decode_strings(const std::string& text);
std::string encode_ints(const std::vector<int>& values);
std::vector<int> decode_ints(const std::string& text);
// Ids as a JSON list, "[1,2,3]": what SQL's json_each() reads in `IN (SELECT value FROM ...)`.
std::string encode_ids(const std::vector<int64_t>& ids);
// A run's step records: a JSON list of model/step.h's StepRun form.
std::string encode_step_runs(const std::vector<StepRun>& steps);
Result<std::vector<StepRun>> decode_step_runs(const std::string& text);

}  // namespace gpuq::store
