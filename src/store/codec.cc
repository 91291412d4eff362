// SPDX-License-Identifier: Apache-2.0
#include "store/codec.h"

#include <nlohmann/json.hpp>

#include "model/spec_json.h"

namespace gpuq::store {

using nlohmann::json;

std::string encode_spec(const JobSpec& spec) { return spec_to_json(spec).dump(); }

Result<JobSpec> decode_spec(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail(Code::kCorruption, "a stored job spec is not valid JSON");
  auto spec = spec_from_json(j, SpecOrigin::kStore);
  if (!spec) return fail(Code::kCorruption, "a stored job spec is unreadable: " + spec.error().message);
  return spec;
}

std::string encode_strings(const std::vector<std::string>& values) { return json(values).dump(); }

std::vector<std::string> decode_strings(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return {};
  std::vector<std::string> out;
  for (const auto& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::string encode_ints(const std::vector<int>& values) { return json(values).dump(); }

std::string encode_ids(const std::vector<int64_t>& ids) { return json(ids).dump(); }

std::vector<int> decode_ints(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return {};
  std::vector<int> out;
  for (const auto& v : j) {
    if (v.is_number_integer()) out.push_back(v.get<int>());
  }
  return out;
}

std::string encode_step_runs(const std::vector<StepRun>& steps) {
  json j = json::array();
  for (const auto& step : steps) j.push_back(step_run_to_json(step));
  return j.dump();
}

Result<std::vector<StepRun>> decode_step_runs(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return fail(Code::kCorruption, "a run's stored steps are not a JSON list");
  std::vector<StepRun> out;
  for (const auto& entry : j) {
    auto step = step_run_from_json(entry);
    if (!step) return tl::unexpected(step.error());
    out.push_back(std::move(*step));
  }
  return out;
}

}  // namespace gpuq::store
