// SPDX-License-Identifier: Apache-2.0
// Small readings of a `gpuq` command line made before CLI11 parses it (which command it names,
// whether it asks for help) or after (an unknown command word), and of the process environment.
// Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"

namespace CLI {
class App;
}

namespace gpuq::cli {

// The line's first word that is no option nor the value of one of gpuq's; "" for none.
std::string command_word(const std::vector<std::string>& args);

// Whether a help is asked for anywhere on the line (after `--` it is the job's, but listing
// every command then costs only time).
bool asks_for_help(const std::vector<std::string>& args);

// The command word when it names no command of `app` (CLI11 would only say one is required);
// "" when it names one.
std::string unknown_command(const CLI::App& app, const std::string& word);

// A variable of the process's environment, or "" when unset.
std::string env_value(const Io& io, std::string_view name);

}  // namespace gpuq::cli
