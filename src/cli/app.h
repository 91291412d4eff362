// SPDX-License-Identifier: Apache-2.0
// The command-line grammar of `gpuq` (CLI11) and the dispatch to one command, separated from
// the real process so tests can run any command line against a fake Io (no daemon, no
// terminal): cli_main() is run_cli() with process_io().
// Stateless functions; one thread per call.
#pragma once

#include <string>
#include <vector>

#include "cli/cli.h"
#include "cli/context.h"

namespace gpuq::cli {

// Runs the command line `args` (without the program name). Returns the exit status.
int run_cli(const std::vector<std::string>& args, const Hooks& hooks, const Io& io);

}  // namespace gpuq::cli
