// SPDX-License-Identifier: Apache-2.0
#include "cli/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>

namespace gpuq::cli {

std::string command_word(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--home" || args[i] == "--url" || args[i] == "--token") {
      ++i;  // its value
    } else if (!args[i].starts_with("-")) {
      return args[i];
    }
  }
  return "";
}

bool asks_for_help(const std::vector<std::string>& args) {
  return std::any_of(args.begin(), args.end(),
                     [](const std::string& a) { return a == "-h" || a == "--help"; });
}

std::string unknown_command(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return "";
  }
  return word;
}

std::string env_value(const Io& io, std::string_view name) {
  for (const std::string& entry : io.environ) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return "";
}

}  // namespace gpuq::cli
