// SPDX-License-Identifier: Apache-2.0
// The `gpuq` command line: parses argv (CLI11), resolves the state directory and runs one
// client command against the daemon's HTTP API (docs/api.md). `gpuq daemon` and the internal
// `gpuq shim` are not client commands: the app provides them as Hooks, so this library needs
// nothing of the daemon. Exit statuses: 0 ok, 1 the daemon refused or a job did not succeed,
// 2 usage error (nothing was sent), 3 no daemon running, 124 `wait --timeout` ran out.
// No exception leaves cli_main. Call it from one thread (it writes std::cout/std::cerr).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gpuq::cli {

struct DaemonFlags {
  std::string home;           // resolved, absolute state directory
  std::string gpus = "auto";  // auto | none | fake:N | 0,2,3 (already checked)
  bool detach = false;
  // The fleet (docs/fleet.md): --fleet (else $GPUQ_FLEET, else [fleet] url), --node, --classes.
  std::string fleet;
  std::string node;
  std::vector<std::string> classes;
  // The TCP listener (docs/api.md, "HTTP listener and the dashboard"): --http ADDR:PORT or off
  // (empty: not given; config.toml's [http] listen, else 127.0.0.1:7878), --http-allow-submit.
  std::string http;
  bool http_allow_submit = false;
  // --system (docs/lab.md): a daemon for the box's users, run as root; its home defaults to
  // /var/lib/gpuq and its socket is base/paths.h system_socket_path(), open to [users] group.
  bool system = false;
};

struct Hooks {
  std::function<int(const DaemonFlags&)> run_daemon;  // runs `gpuq daemon`
  // Runs `gpuq shim ...` (internal, hidden from help). It is called only when "shim" is the
  // first argument, with argv[0] == "shim" followed by the shim's arguments, untouched.
  std::function<int(int argc, char** argv)> run_shim;
  // What `gpuq --version` prints, e.g. "gpuq 0.1.0" (the app knows its version; this library
  // does not). Empty: no --version flag.
  std::string version;
  // What the generated man pages and completion scripts say they describe: "gpuq 0.1.0", and
  // the build's day, "2026-12-02". Empty: "gpuq" and no day.
  std::string release;
  std::string build_date;
};

// Returns the process exit status.
int cli_main(int argc, char** argv, const Hooks& hooks);

}  // namespace gpuq::cli
