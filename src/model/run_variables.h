// The names of the variables gpuq sets in every run's environment (docs/jobs.md, "The run
// environment"). A submitted environment never overrides them, the CLI does not copy them
// from the submitter's shell, and a daemon started inside a job drops them from its own.
// Other GPUQ_* variables (GPUQ_HOME, ...) are ordinary settings and pass through.
// Pure; thread-safe.
#pragma once

#include <array>
#include <string_view>

namespace gpuq {

inline constexpr std::array<std::string_view, 11> kRunVariables = {
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GPUQ_JOB_ID",    "GPUQ_JOB_NAME",
    "GPUQ_RUN_NUMBER",      "GPUQ_JOB_DIR",      "GPUQ_RUN_DIR",   "GPUQ_RESUME",
    "GPUQ_YIELD_FILE",      "GPUQ_GPUS",         "GPUQ_RUN_ID"};

inline bool is_run_variable(std::string_view name) {
  for (std::string_view v : kRunVariables) {
    if (v == name) return true;
  }
  return false;
}

}  // namespace gpuq
