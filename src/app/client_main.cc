// SPDX-License-Identifier: Apache-2.0
// The `gpuq` binary people and scripts call: the light client (cli/light_client.h). A line it
// does not serve itself runs in the full binary, gpuqd, which it finds beside itself or in
// ../libexec/gpuq/ and execs with the same argv (so `ps` still shows `gpuq daemon ...`).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "cli/light_client.h"

namespace {

// Execs the full binary with this process's argv; returns only when no candidate could run.
int run_full_binary(char** argv) {
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  const std::vector<std::string> candidates =
      gpuq::cli::full_binary_candidates(ec ? std::string(argv[0]) : self);
  int error = ENOENT;  // what to tell: why a binary that is there did not run, else "missing"
  for (const std::string& path : candidates) {
    ::execv(path.c_str(), argv);
    if (errno != ENOENT) error = errno;
  }
  std::cerr << "gpuq: cannot run the full gpuq binary (" << candidates.front() << " or "
            << candidates.back() << "): " << std::strerror(error)
            << "\ngpuqd is installed beside gpuq or in ../libexec/gpuq/ (docs/install.md); "
               "reinstall gpuq, or rebuild with scripts/build.sh gpuq\n";
  return gpuq::cli::kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  const char* url = std::getenv("GPUQ_URL");
  if (!gpuq::cli::light_client_serves(args, url == nullptr ? "" : url))
    return run_full_binary(argv);
  try {
    gpuq::cli::Io io = gpuq::cli::client_process_io();
    return gpuq::cli::run_light_client(args, io);
  } catch (const std::exception& e) {
    std::cerr << "gpuq: internal error: " << e.what() << '\n';
    return gpuq::cli::kExitFailed;
  }
}
