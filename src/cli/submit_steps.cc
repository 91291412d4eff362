// SPDX-License-Identifier: Apache-2.0
#include "cli/submit_steps.h"

#include <fmt/format.h>

#include <filesystem>

#include "cli/exit_codes.h"
#include "spec/headers.h"
#include "spec/script.h"
#include "spec/shell_words.h"

namespace gpuq::cli {
namespace {

// The fix that follows a splitting error: an unbalanced quote only says what is wrong.
std::string with_fix(const std::string& message) {
  if (!message.starts_with("unbalanced")) return message;
  return message + "; close the quote, or quote the whole step in the other kind of quotes";
}

// Whether a step's first word names a script to snapshot rather than a command to run.
bool names_a_file(const std::string& word) {
  std::error_code ec;
  return std::filesystem::exists(word, ec) && !std::filesystem::is_directory(word, ec);
}

// A script step: the script's text and step headers, and the other words as its arguments.
Outcome<Json> script_step(const std::string& flag, const std::vector<std::string>& words) {
  const std::string& script = words.front();
  auto text = spec::read_script(script);
  if (!text) {
    return cli_fail(kExitUsage,
                    fmt::format("{}: {} (a step whose first word names a file is that script; to "
                                "run the file as a program instead, write --step 'env {} ...')",
                                flag, text.error().message, script));
  }
  auto headers = spec::parse_script_headers(script, *text, spec::ScriptRole::kStep);
  if (!headers) return cli_fail(kExitUsage, headers.error().message);
  Json step =
      Json::parse(headers->fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  nullptr, false);
  if (!step.is_object()) step = Json::object();
  step["script"] = {
      {"name", script},
      {"text", *text},
      {"args", std::vector<std::string>(words.begin() + 1, words.end())},
  };
  return step;
}

}  // namespace

Outcome<Json> steps_request(const std::vector<std::string>& texts) {
  Json steps = Json::array();
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string flag =
        fmt::format("--step '{}' (step {})", clip_for_message(texts[i]), i + 1);
    auto words = spec::split_shell_words(texts[i], {.refuse_shell_syntax = true});
    if (!words)
      return cli_fail(kExitUsage, fmt::format("{}: {}", flag, with_fix(words.error().message)));
    if (words->empty()) {
      return cli_fail(kExitUsage, fmt::format("{}: a step needs a script or a command, as in "
                                              "--step 'train.sh --lr 3e-4'",
                                              flag));
    }
    if (names_a_file(words->front())) {
      auto step = script_step(flag, *words);
      if (!step) return tl::unexpected(step.error());
      steps.push_back(std::move(*step));
    } else {
      steps.push_back({{"argv", *words}});
    }
  }
  return steps;
}

}  // namespace gpuq::cli
