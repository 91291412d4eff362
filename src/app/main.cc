// SPDX-License-Identifier: Apache-2.0
// The gpuq binary: the CLI, the daemon (`gpuq daemon`) and the per-run shim (`gpuq shim`).
#include "app/build_info.h"
#include "app/serve.h"
#include "cli/cli.h"
#include "runner/shim.h"

int main(int argc, char** argv) {
  gpuq::cli::Hooks hooks;
  hooks.run_daemon = [](const gpuq::cli::DaemonFlags& flags) { return gpuq::app::serve(flags); };
  hooks.run_shim = [](int n, char** args) { return gpuq::runner::shim_main(n, args); };
  hooks.version = gpuq::app::version_text();
  hooks.release = gpuq::app::release_name();
  hooks.build_date = gpuq::app::kBuildDate;
  return gpuq::cli::cli_main(argc, argv, hooks);
}
