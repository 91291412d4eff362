// SPDX-License-Identifier: Apache-2.0
#include "cli/submit_env.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/run_variables.h"

namespace gpuq::cli {
namespace {

template <size_t N>
bool listed(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_clean_variable(std::string_view name) {
  return listed(kCleanEnvVariables, name) || name.starts_with("LC_");
}

}  // namespace

bool is_session_variable(std::string_view name) { return listed(kSessionVariables, name); }

std::map<std::string, std::string> environment_map(const std::vector<std::string>& environ) {
  std::map<std::string, std::string> env;
  for (const auto& entry : environ) {
    size_t eq = entry.find('=');
    if (eq != std::string::npos && eq > 0) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

Result<std::map<std::string, std::string>> job_environment(const std::vector<std::string>& environ,
                                                           const std::vector<std::string>& overrides,
                                                           bool clean) {
  std::map<std::string, std::string> env;
  for (const auto& entry : environ) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string key = entry.substr(0, eq);
    // Variables gpuq sets itself for every run (docs/jobs.md): a submitted value would be a
    // lie. Other GPUQ_* settings (GPUQ_HOME) pass through, so a job can drive its own daemon.
    if (is_run_variable(key) || is_element_variable(key) || is_session_variable(key)) continue;
    if (clean && !is_clean_variable(key)) continue;
    env[key] = entry.substr(eq + 1);
  }
  for (const auto& entry : overrides) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return fail(Code::kInvalidArgument,
                  fmt::format("bad --env '{}': write it as --env KEY=VALUE", entry));
    }
    std::string key = entry.substr(0, eq);
    if (is_run_variable(key)) {
      return fail(Code::kInvalidArgument,
                  fmt::format("--env {}: gpuq sets {} itself for every run", key, key));
    }
    env[key] = entry.substr(eq + 1);
  }
  return env;
}

}  // namespace gpuq::cli
