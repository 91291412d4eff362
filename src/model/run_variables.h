// SPDX-License-Identifier: Apache-2.0
// The names of the variables gpuq sets in every run's environment (docs/jobs.md, "The run
// environment"). A submitted environment never overrides them, the CLI does not copy them
// from the submitter's shell, and a daemon started inside a job drops them from its own.
// Other GPUQ_* variables (GPUQ_HOME, ...) are ordinary settings and pass through.
// Pure; thread-safe.
#pragma once

#include <array>
#include <string_view>

namespace gpuq {

// TDPRM_GPU0 is the first GPU the run holds, under the name the plans of another queue read.
inline constexpr std::array<std::string_view, 13> kRunVariables = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GPUQ_JOB_ID",    "GPUQ_JOB_NAME",
    "GPUQ_RUN_NUMBER",      "GPUQ_JOB_DIR",      "GPUQ_RUN_DIR",   "GPUQ_RESUME",
    "GPUQ_YIELD_FILE",      "GPUQ_GPUS",         "GPUQ_RUN_ID",    "GPUQ_ARRAY_ID",
    "TDPRM_GPU0"};

inline bool is_run_variable(std::string_view name) {
  for (std::string_view v : kRunVariables) {
    if (v == name) return true;
  }
  return false;
}

// The variables of an element of an array or grid (docs/sweeps.md): GPUQ_ARRAY_INDEX and
// GPUQ_PARAM_<NAME>. The daemon sets them in each element's environment when it queues the
// array; the CLI does not copy them from the submitter's shell (a job submitted from inside an
// element is not an element).
inline bool is_element_variable(std::string_view name) {
  return name == "GPUQ_ARRAY_INDEX" || name.starts_with("GPUQ_PARAM_");
}

}  // namespace gpuq
