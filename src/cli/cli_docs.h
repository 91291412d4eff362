// SPDX-License-Identifier: Apache-2.0
// Documentation made from the command line's own definitions (the CLI11 tree app.cc builds),
// so that it never disagrees with `gpuq COMMAND --help`: man pages in man(7) roff, gpuq.1 and
// one page per command (gpuq-submit.1, gpuq-fleet-submit.1), and completion scripts for bash,
// zsh and fish. A command or option whose group is empty is hidden from help, and from these
// too. Pure functions over the tree: they read nothing else and write nothing.
// `gpuq completion SHELL` and `gpuq manpages --dir DIR` (cmd_docs.cc) print and write them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace CLI {
class App;
}

namespace gpuq::cli {

// What every page's header says: "gpuq 0.1.0" and the day, YYYY-MM-DD.
struct ManualInfo {
  std::string source;
  std::string date;
};

struct ManPage {
  std::string file;  // "gpuq.1", "gpuq-fleet-submit.1"
  std::string text;
};

// gpuq.1 first, then a page for every visible command at any depth, in the tree's order.
std::vector<ManPage> man_pages(const CLI::App& root, const ManualInfo& info);

// The completion script for `shell`: "bash", "zsh" or "fish"; Code::kInvalidArgument naming
// the three otherwise. `source` ("gpuq 0.1.0") goes into its header comment.
Result<std::string> completion_script(const CLI::App& root, std::string_view shell,
                                      std::string_view source);

}  // namespace gpuq::cli
