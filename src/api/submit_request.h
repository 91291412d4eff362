// Turns the JSON body of POST /v1/jobs (docs/api.md, "Submit request") into a JobSpec.
// Strict: an unknown field or a value of the wrong type is an error naming the field, so
// nothing a client sends is silently ignored. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "model/job.h"

namespace gpuq::api {

Result<JobSpec> parse_submit_request(const nlohmann::json& body);

}  // namespace gpuq::api
