// SPDX-License-Identifier: Apache-2.0
// `gpuq completion SHELL` and `gpuq manpages --dir DIR`: the texts of cli/cli_docs.h, printed or
// written, one file per page.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli/cli_docs.h"
#include "cli/commands.h"

namespace gpuq::cli {
namespace {

std::string source_of(const std::string& release) { return release.empty() ? "gpuq" : release; }

}  // namespace

int run_completion(const CLI::App& root, const DocsOptions& options, const std::string& release,
                   const Io& io) {
  auto script = completion_script(root, options.shell, source_of(release));
  if (!script) {
    *io.err << "gpuq completion: " << script.error().message << '\n';
    return kExitUsage;
  }
  *io.out << *script;
  return kExitOk;
}

int run_manpages(const CLI::App& root, const DocsOptions& options, const std::string& release,
                 const std::string& build_date, const Io& io) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    *io.err << "gpuq manpages: cannot create " << options.dir << ": " << ec.message() << '\n';
    return kExitFailed;
  }
  for (const ManPage& page : man_pages(root, {source_of(release), build_date})) {
    std::string path = (std::filesystem::path(options.dir) / page.file).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << page.text;
    out.close();
    if (!out) {
      *io.err << "gpuq manpages: cannot write " << path << ": " << std::strerror(errno) << '\n';
      return kExitFailed;
    }
    *io.out << path << '\n';
  }
  return kExitOk;
}

}  // namespace gpuq::cli
