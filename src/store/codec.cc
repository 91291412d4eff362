#include "store/codec.h"

#include <nlohmann/json.hpp>

namespace gpuq::store {

using nlohmann::json;

std::string encode_spec(const JobSpec& spec) {
  json j = {{"gpus", spec.gpus},         {"priority", spec.priority},
            {"cwd", spec.cwd},           {"env", spec.env},
            {"argv", spec.argv},         {"script_name", spec.script_name},
            {"script_text", spec.script_text}, {"script_args", spec.script_args}};
  if (!spec.name.empty()) j["name"] = spec.name;
  return j.dump();
}

Result<JobSpec> decode_spec(const std::string& text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return fail(Code::kCorruption, "a stored job spec is not valid JSON");
  }
  JobSpec spec;
  try {
    spec.name = j.value("name", "");
    spec.gpus = j.at("gpus").get<int>();
    spec.priority = j.at("priority").get<int>();
    spec.cwd = j.at("cwd").get<std::string>();
    spec.env = j.at("env").get<std::map<std::string, std::string>>();
    spec.argv = j.at("argv").get<std::vector<std::string>>();
    spec.script_name = j.at("script_name").get<std::string>();
    spec.script_text = j.at("script_text").get<std::string>();
    spec.script_args = j.at("script_args").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    return fail(Code::kCorruption, std::string("a stored job spec is malformed: ") + e.what());
  }
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

std::vector<int> decode_ints(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_array()) return {};
  std::vector<int> out;
  for (const auto& v : j) {
    if (v.is_number_integer()) out.push_back(v.get<int>());
  }
  return out;
}

}  // namespace gpuq::store
