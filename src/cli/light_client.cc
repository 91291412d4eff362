// SPDX-License-Identifier: Apache-2.0
#include "cli/light_client.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>

#include "base/paths.h"
#include "cli/client_cli.h"
#include "cli/command_line.h"

namespace gpuq::cli {

bool light_client_serves(const std::vector<std::string>& args, std::string_view url_env) {
  if (!url_env.empty() || !is_client_command(command_word(args)) || asks_for_help(args)) return false;
  return std::none_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--version" || a == "--mine" || a == "--url" || a.starts_with("--url=") ||
           a == "--token" || a.starts_with("--token=");
  });
}

int run_light_client(const std::vector<std::string>& args, const Io& io) {
  CLI::App app(kAppDescription, "gpuq");
  ClientOptions options;
  options.only_command = command_word(args);
  options.lists_all = false;
  define_global_options(app, options);
  define_client_commands(app, options);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11's order
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // a help the line asked for in a way not foreseen
    return app.exit(e, *io.out, *io.err);
  } catch (const CLI::ParseError& e) {
    *io.err << "gpuq: " << e.what() << "\nRun 'gpuq --help' for usage.\n";
    return kExitUsage;
  }
  const std::string command = app.get_subcommands().front()->get_name();
  if (command == "submit") {
    if (auto st = finish_submit(*app.get_subcommands().front(), options.submit); !st) {
      *io.err << "gpuq: " << st.error().message << "\nRun 'gpuq submit --help' for usage.\n";
      return kExitUsage;
    }
  }
  auto home = resolve_home(options.home);
  if (!home) {
    *io.err << "gpuq: " << home.error().message << '\n';
    return kExitUsage;
  }
  Context ctx(io, *home, !options.home.empty());
  return run_client_command(ctx, command, options);
}

std::vector<std::string> full_binary_candidates(const std::string& self) {
  const auto slash = self.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
  return {dir + "/gpuqd", dir + "/../libexec/gpuq/gpuqd"};
}

std::string client_binary_for(const std::string& full) {
  constexpr std::string_view kBeside = "/gpuqd";
  constexpr std::string_view kLibexec = "/libexec/gpuq/gpuqd";
  std::string client;
  if (full.ends_with(kLibexec)) {
    client = full.substr(0, full.size() - kLibexec.size()) + "/bin/gpuq";
  } else if (full.ends_with(kBeside)) {
    client = full.substr(0, full.size() - kBeside.size()) + "/gpuq";
  }
  return !client.empty() && ::access(client.c_str(), X_OK) == 0 ? client : "";
}

}  // namespace gpuq::cli
