// SPDX-License-Identifier: Apache-2.0
#include "cli/cli.h"

#include <exception>
#include <iostream>
#include <string_view>

#include "cli/app.h"
#include "cli/context.h"

namespace gpuq::cli {

int cli_main(int argc, char** argv, const Hooks& hooks) {
  try {
    // The shim is started by the runner with an exact argv; it must not go through the
    // client's grammar, so it is handed over untouched.
    if (argc >= 2 && std::string_view(argv[1]) == "shim") {
      if (!hooks.run_shim) {
        std::cerr << "gpuq: this build has no shim\n";
        return kExitFailed;
      }
      return hooks.run_shim(argc - 1, argv + 1);
    }
    std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    Io io = process_io();
    return run_cli(args, hooks, io);
  } catch (const std::exception& e) {
    std::cerr << "gpuq: internal error: " << e.what() << '\n';
    return kExitFailed;
  }
}

}  // namespace gpuq::cli
