// SPDX-License-Identifier: Apache-2.0
#include "cli/context.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "base/time.h"
#include "cli/socket_transport.h"

extern char** environ;

namespace gpuq::cli {

Io client_process_io() {
  Io io;
  io.out = &std::cout;
  io.err = &std::cerr;
  io.color = want_color(::isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR") != nullptr);
  io.connect = [](const std::string& socket_path) -> Result<std::unique_ptr<Transport>> {
    return SocketTransport::create(socket_path);
  };
  io.wall_ms = [] { return wall_now_ms(); };
  io.steady_ms = [] {
    return std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  io.sleep = [](Millis duration) { std::this_thread::sleep_for(duration); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) io.environ.emplace_back(*e);
  std::error_code ec;
  io.cwd = std::filesystem::current_path(ec).string();
  return io;
}

DaemonClient& Context::client() {
  if (client_) return *client_;
  if (remote_.base.empty()) {
    client_ = std::make_unique<DaemonClient>(io_.connect, home_, home_given_);
  } else {
    TransportFactory tcp = [connect = io_.connect_tcp, url = remote_, token = token_](const std::string&)
        -> Result<std::unique_ptr<Transport>> {
      if (!connect) return fail(Code::kInternal, "this build cannot reach a daemon over TCP");
      return connect(url, token);
    };
    client_ = std::make_unique<DaemonClient>(std::move(tcp), home_, home_given_, remote_.base,
                                             token_withheld_);
  }
  return *client_;
}

int Context::report(int exit_code, std::string_view message) const {
  err() << "gpuq: " << message << '\n';
  err().flush();
  return exit_code;
}

}  // namespace gpuq::cli
