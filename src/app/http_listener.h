// SPDX-License-Identifier: Apache-2.0
// `gpuq daemon`'s TCP listener (docs/api.md, "HTTP listener and the dashboard"): which address
// it listens on (--http, else config.toml's [http] listen, else 127.0.0.1:7878), the token
// file, and starting it on the API server, which records the bound address beside the token
// ($GPUQ_HOME/token.listen: the CLI sends the home's token there only). A default address that
// is busy is not fatal (the daemon writes event daemon.http_failed and serves on its unix
// socket); an address someone asked for that cannot be bound fails the start.
// Plain functions, called on the daemon's main thread during its start.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/server.h"
#include "base/listen_address.h"
#include "base/paths.h"
#include "cli/cli.h"
#include "config/config.h"
#include "daemon/queue.h"

namespace gpuq::app {

struct HttpSetup {
  std::optional<ListenAddress> address;  // nullopt: HTTP off
  bool asked = false;                    // named by --http or [http] listen, not the default
  std::vector<std::string> allowed_hosts;
  bool allow_submit = false;
  std::string token;                     // read or made at $GPUQ_HOME/token when HTTP is on
  std::string listen_record;             // $GPUQ_HOME/token.listen
};

// Resolves the address and reads (or makes) the token file; an error says what to fix.
Result<HttpSetup> prepare_http(const cli::DaemonFlags& flags, const config::HttpConfig& config,
                               const HomeLayout& layout);

// Starts the listener on `server` and records its bound address at setup.listen_record (a
// start without a listener removes the record). A busy default port is reported on stderr and
// as event daemon.http_failed through `queue` (the actor's thread, before the actor runs), and
// is not an error; any other failure is, a record that cannot be written too. Returns a line
// for the daemon's start message (empty if none).
Result<std::string> start_http(const HttpSetup& setup, api::Server& server, daemon::Queue& queue);

}  // namespace gpuq::app
