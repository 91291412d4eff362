// SPDX-License-Identifier: Apache-2.0
// Where a daemon keeps its state, found the same way by the daemon and the CLI:
// --home DIR, else $GPUQ_HOME, else $XDG_STATE_HOME/gpuq, else ~/.local/state/gpuq.
// Also the fixed names inside it. Pure apart from reading the environment; thread-safe.
#pragma once

#include <string>
#include <utility>

#include "base/status.h"

namespace gpuq {

// The state directory for `flag` (empty when --home was not given), made absolute.
Result<std::string> resolve_home(const std::string& flag);

// Where a system daemon (`gpuq daemon --system`, docs/lab.md) serves the users of the box:
// $GPUQ_SYSTEM_SOCKET, else /run/gpuq/gpuq.sock. The CLI uses it when the user has no daemon.
std::string system_socket_path();
// Where a system daemon keeps its state when --home does not say: /var/lib/gpuq.
inline constexpr const char* kSystemHome = "/var/lib/gpuq";

struct HomeLayout {
  HomeLayout() = default;
  explicit HomeLayout(std::string home_dir) : home(std::move(home_dir)) {}
  std::string home;
  std::string socket() const { return home + "/gpuq.sock"; }
  std::string database() const { return home + "/gpuq.db"; }
  std::string lock() const { return home + "/daemon.lock"; }
  std::string daemon_log() const { return home + "/daemon.log"; }
  // The HTTP listener's token (base/token_file.h), mode 0600.
  std::string token() const { return home + "/token"; }
  // Where the listener that token was made for is bound ("127.0.0.1:7878"), mode 0600: the
  // CLI sends the home's token to that address only (base/token_file.h, cli/token_scope.h).
  std::string token_listen() const { return home + "/token.listen"; }
  std::string jobs_dir() const { return home + "/jobs"; }
  std::string job_dir(int64_t job_id) const { return jobs_dir() + "/" + std::to_string(job_id); }
  std::string run_dir(int64_t job_id, int run_number) const {
    return job_dir(job_id) + "/run-" + std::to_string(run_number);
  }
};

}  // namespace gpuq
