// SPDX-License-Identifier: Apache-2.0
// What every client command works with: the process around it (`Io`: output streams, whether
// to colour, clocks, the environment, how to reach the daemon and a fleet's store) and the
// resolved home.
// `process_io()` describes the real process; tests build an Io with string streams, fake
// clocks and a FakeTransport, so every command runs without a daemon or a terminal.
// A Context is used by one thread; it owns its DaemonClient (created on first use).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "base/duration.h"
#include "cli/daemon_client.h"
#include "cli/exit_codes.h"
#include "cli/table.h"

namespace gpuq::fleet {
class ObjectStore;
}

namespace gpuq::cli {

struct Io {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool color = false;                  // colour human output
  TransportFactory connect;            // how to reach a daemon's socket
  std::function<int64_t()> wall_ms;    // epoch milliseconds, for ages
  std::function<int64_t()> steady_ms;  // monotonic, for deadlines
  std::function<void(Millis)> sleep;   // used only by `logs -f`
  std::vector<std::string> environ;    // "KEY=VALUE" of this process
  std::string cwd;                     // absolute current directory
  std::function<std::string()> login;  // this process's user's login name (`--mine`)
  // How `gpuq --url` reaches a daemon's HTTP listener with its token (CurlTransport::create_tcp).
  std::function<Result<std::unique_ptr<Transport>>(const DaemonUrl& url, const std::string& token)> connect_tcp;
  // Opens a URL in the desktop's browser (`gpuq dashboard`); false when it could not be started.
  std::function<bool(const std::string& url)> open_url;
  // How `gpuq fleet` opens its store from a URL; empty: open_fleet_store (cli/fleet_commands.h).
  std::function<Result<std::unique_ptr<fleet::ObjectStore>>(const std::string& url)> open_fleet;
};

// The real process as the light client (light_client.h) sees it: std::cout/std::cerr, colour
// when stdout is a terminal and NO_COLOR is unset, the daemon's socket, the system clocks,
// `environ` and getcwd(); no TCP, browser or login lookup (each would link libraries whose
// loading every start pays: those lines go to the full binary).
Io client_process_io();

// The real process: client_process_io() and CurlTransport for --url, xdg-open for
// `gpuq dashboard`, the login name through NSS for --mine (process_io.cc).
Io process_io();

class Context {
 public:
  Context(const Io& io, std::string home, bool home_given)
      : io_(io), home_(std::move(home)), home_given_(home_given) {}

  std::ostream& out() const { return *io_.out; }
  std::ostream& err() const { return *io_.err; }
  bool color() const { return io_.color; }
  const Io& io() const { return io_; }
  const std::string& home() const { return home_; }

  DaemonClient& client();

  // `gpuq --url URL --token T`: every request goes to that HTTP listener, not the home's socket.
  // `token_withheld`: why the home's token was not sent (cli/token_scope.h), added to a 401.
  void set_remote(DaemonUrl url, std::string token, std::string token_withheld = "") {
    remote_ = std::move(url);
    token_ = std::move(token);
    token_withheld_ = std::move(token_withheld);
  }
  const DaemonUrl& remote() const { return remote_; }  // base empty: the unix socket
  const std::string& remote_token() const { return token_; }
  const std::string& remote_token_withheld() const { return token_withheld_; }

  // Prints "gpuq: <message>" on stderr and returns `exit_code`.
  int report(int exit_code, std::string_view message) const;
  int report(const CliError& error) const { return report(error.exit_code, error.message); }

 private:
  const Io& io_;
  std::string home_;
  bool home_given_;
  DaemonUrl remote_;
  std::string token_;
  std::string token_withheld_;
  std::unique_ptr<DaemonClient> client_;
};

}  // namespace gpuq::cli
