#include "api/submit_request.h"

#include <fmt/format.h>
#include <set>

namespace gpuq::api {
namespace {

using nlohmann::json;

Status expect(const json& body, const char* key, json::value_t type, const char* what) {
  if (!body.contains(key)) return ok();
  const json& v = body.at(key);
  bool good = v.type() == type ||
              (type == json::value_t::number_integer && v.is_number_integer());
  if (!good) return fail(Code::kInvalidArgument, fmt::format("field '{}' must be {}", key, what));
  return ok();
}

Result<std::vector<std::string>> string_list(const json& v, const char* key) {
  if (!v.is_array()) return fail(Code::kInvalidArgument, fmt::format("field '{}' must be a list of strings", key));
  std::vector<std::string> out;
  for (const auto& item : v) {
    if (!item.is_string()) {
      return fail(Code::kInvalidArgument, fmt::format("field '{}' must be a list of strings", key));
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace

Result<JobSpec> parse_submit_request(const json& body) {
  if (!body.is_object()) return fail(Code::kInvalidArgument, "the body must be a JSON object");
  static const std::set<std::string> known = {"name", "gpus", "priority", "cwd", "env", "argv", "script"};
  for (const auto& [key, value] : body.items()) {
    if (!known.count(key)) {
      return fail(Code::kInvalidArgument,
                  fmt::format("unknown field '{}'; known fields: name, gpus, priority, cwd, env, "
                              "argv, script",
                              key));
    }
  }
  for (auto st : {expect(body, "name", json::value_t::string, "a string"),
                  expect(body, "gpus", json::value_t::number_integer, "an integer"),
                  expect(body, "cwd", json::value_t::string, "a string"),
                  expect(body, "env", json::value_t::object, "an object of strings"),
                  expect(body, "script", json::value_t::object, "an object")}) {
    if (!st) return tl::unexpected(st.error());
  }
  JobSpec spec;
  spec.name = body.value("name", "");
  if (spec.name.find_first_of(" /\t\n") != std::string::npos ||
      (!spec.name.empty() && spec.name.find_first_not_of("0123456789") == std::string::npos)) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad job name '{}': use letters, digits, '-', '_' or '.', not only "
                            "digits (numbers are job ids)",
                            spec.name));
  }
  spec.gpus = body.value("gpus", 0);
  spec.cwd = body.value("cwd", "");
  if (body.contains("priority")) {
    const json& p = body.at("priority");
    auto parsed = p.is_string() ? parse_priority(p.get<std::string>())
                  : p.is_number_integer() ? parse_priority(std::to_string(p.get<int64_t>()))
                                          : parse_priority("?");
    if (!parsed) return tl::unexpected(parsed.error());
    spec.priority = *parsed;
  }
  if (body.contains("env")) {
    for (const auto& [k, v] : body.at("env").items()) {
      if (!v.is_string()) {
        return fail(Code::kInvalidArgument, fmt::format("env value of '{}' must be a string", k));
      }
      spec.env[k] = v.get<std::string>();
    }
  }
  if (body.contains("argv")) {
    auto argv = string_list(body.at("argv"), "argv");
    if (!argv) return tl::unexpected(argv.error());
    spec.argv = std::move(*argv);
    if (spec.argv.empty()) return fail(Code::kInvalidArgument, "field 'argv' is empty: name a command to run");
  }
  if (body.contains("script")) {
    const json& script = body.at("script");
    for (const auto& [key, value] : script.items()) {
      if (key != "name" && key != "text" && key != "args") {
        return fail(Code::kInvalidArgument,
                    fmt::format("unknown field 'script.{}'; known: name, text, args", key));
      }
    }
    if (!script.contains("text") || !script.at("text").is_string()) {
      return fail(Code::kInvalidArgument, "field 'script.text' must be the script's content");
    }
    spec.script_text = script.at("text").get<std::string>();
    spec.script_name = script.value("name", std::string("script"));
    if (script.contains("args")) {
      auto args = string_list(script.at("args"), "script.args");
      if (!args) return tl::unexpected(args.error());
      spec.script_args = std::move(*args);
    }
  }
  if (body.contains("argv") == body.contains("script")) {
    return fail(Code::kInvalidArgument, "give exactly one of 'argv' (a command) or 'script'");
  }
  return spec;
}

}  // namespace gpuq::api
