// SPDX-License-Identifier: Apache-2.0
#include "spec/plan_paths.h"

#include <fmt/format.h>

#include "spec/shell_words.h"

namespace gpuq::spec {
namespace {

bool name_start(char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

Result<std::string> value_of(const std::string& name,
                             const std::map<std::string, std::string>& env) {
  auto found = env.find(name);
  if (found == env.end()) {
    return invalid_argument(fmt::format(
        "${} is not set in the environment gpuq was run from; set it, or write the path in full",
        name));
  }
  return found->second;
}

// `text` from `at` on, whose `$` starts a variable: its value, and `at` moved past it.
Result<std::string> variable_at(std::string_view text, size_t& at,
                                const std::map<std::string, std::string>& env) {
  if (text[at + 1] == '{') {
    size_t close = text.find('}', at + 2);
    if (close == std::string_view::npos) {
      return invalid_argument(fmt::format("'${{' without its '}}' in '{}'; write ${{NAME}}", text));
    }
    std::string name(text.substr(at + 2, close - at - 2));
    bool plain = !name.empty() && name_start(name[0]);
    for (char c : name) plain = plain && name_char(c);
    if (!plain) {
      return invalid_argument(fmt::format(
          "'${{{}}}' in '{}': only ${{NAME}} is expanded in a plan's paths (no defaults or other "
          "shell forms); write the path in full",
          name, text));
    }
    at = close + 1;
    return value_of(name, env);
  }
  size_t end = at + 1;
  while (end < text.size() && name_char(text[end])) ++end;
  std::string name(text.substr(at + 1, end - at - 1));
  at = end;
  return value_of(name, env);
}

}  // namespace

Result<std::string> expand_plan_path(std::string_view text,
                                     const std::map<std::string, std::string>& env) {
  std::string out;
  size_t at = 0;
  if (!text.empty() && text[0] == '~') {
    if (text.size() > 1 && text[1] != '/') {
      return invalid_argument(fmt::format(
          "'{}': only ~ (your home) is expanded, not ~user; write that user's home in full",
          text));
    }
    auto home = env.find("HOME");
    if (home == env.end() || home->second.empty()) {
      return invalid_argument(
          fmt::format("'{}' starts with ~ and HOME is not set; set HOME or write the path in full",
                      text));
    }
    out = home->second;
    at = 1;
  }
  while (at < text.size()) {
    char c = text[at];
    bool variable = c == '$' && at + 1 < text.size() &&
                    (text[at + 1] == '{' || name_start(text[at + 1]));
    if (!variable) {
      out += c;
      ++at;
      continue;
    }
    auto value = variable_at(text, at, env);
    if (!value) return tl::unexpected(value.error());
    out += *value;
  }
  return out;
}

Result<ScriptWords> read_script_words(std::string_view text,
                                      const std::map<std::string, std::string>& env,
                                      const std::function<bool(const std::string&)>& exists) {
  auto whole = expand_plan_path(text, env);
  if (whole && exists(*whole)) return ScriptWords{std::move(*whole), {}};
  auto words = split_shell_words(text);
  if (!words) {
    return invalid_argument(fmt::format("'{}': {}; a script and its arguments are split as a "
                                        "shell splits words",
                                        text, words.error().message));
  }
  if (words->empty()) return invalid_argument("the script's path is empty");
  ScriptWords out;
  for (size_t i = 0; i < words->size(); ++i) {
    auto word = expand_plan_path((*words)[i], env);
    if (!word) return tl::unexpected(word.error());
    if (i == 0) {
      out.path = std::move(*word);
    } else {
      out.args.push_back(std::move(*word));
    }
  }
  return out;
}

}  // namespace gpuq::spec
