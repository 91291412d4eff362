// SPDX-License-Identifier: Apache-2.0
#include "app/http_listener.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "base/token_file.h"

namespace gpuq::app {
namespace {

// No listener this start: the recorded address may be another program's by now.
void forget_listen_record(const std::string& path) {
  if (auto removed = remove_token_listen(path); !removed) {
    std::fprintf(stderr, "gpuq daemon: %s\n", removed.error().message.c_str());
  }
}

}  // namespace

Result<HttpSetup> prepare_http(const cli::DaemonFlags& flags, const config::HttpConfig& config,
                               const HomeLayout& layout) {
  HttpSetup setup;
  std::string text = std::string(kDefaultHttpListen);
  if (!flags.http.empty()) {
    text = flags.http;
    setup.asked = true;
  } else if (!config.listen.empty()) {
    text = config.listen;
    setup.asked = true;
  }
  auto address = parse_listen_address(text);
  if (!address) return tl::unexpected(address.error());
  setup.address = *address;
  setup.allowed_hosts = config.allowed_hosts;
  setup.allow_submit = flags.http_allow_submit || config.allow_submit;
  setup.listen_record = layout.token_listen();
  if (!setup.address) return setup;
  auto token = ensure_token_file(layout.token(), ::geteuid());
  if (!token) return tl::unexpected(token.error());
  setup.token = std::move(*token);
  return setup;
}

Result<std::string> start_http(const HttpSetup& setup, api::Server& server, daemon::Queue& queue) {
  if (!setup.address) {
    forget_listen_record(setup.listen_record);
    return std::string();
  }
  auto policy = api::TcpPolicy::make(setup.token, *setup.address, setup.allowed_hosts, setup.allow_submit);
  auto listening = server.listen_tcp(*setup.address, std::move(policy));
  if (listening) {
    if (auto recorded = write_token_listen(setup.listen_record, server.tcp_listen()); !recorded) {
      return fail(recorded.error().code,
                  fmt::format("recording where the HTTP listener listens: {}", recorded.error().message));
    }
    std::string line = fmt::format("  http: http://{}/ (gpuq dashboard prints the link that logs in){}\n",
                                   server.tcp_listen(), setup.allow_submit ? "; submits allowed" : "");
    if (!setup.address->loopback()) {
      // Said on stderr too, so that it is in daemon.log and the journal, not only on a terminal.
      std::string warning = fmt::format(
          "warning: the HTTP listener on {} can be reached from other machines: the token is its "
          "only guard and the traffic is plain HTTP, token and cookie included; listen on "
          "127.0.0.1 and reach it through `ssh -L` or a TLS proxy (docs/dashboard.md)",
          setup.address->text());
      std::fprintf(stderr, "gpuq daemon: %s\n", warning.c_str());
      line += "  " + warning + "\n";
    }
    return line;
  }
  forget_listen_record(setup.listen_record);
  std::string fix = setup.asked
                        ? "choose another address (--http ADDR:PORT or [http] listen), or --http off"
                        : fmt::format("another program (or another gpuq daemon) uses {}: start this "
                                      "one with --http 127.0.0.1:PORT (or [http] listen in "
                                      "config.toml), or --http off",
                                      setup.address->text());
  if (setup.asked || listening.error().code != Code::kUnavailable) {
    return fail(listening.error().code, fmt::format("{}; {}", listening.error().message, fix));
  }
  std::fprintf(stderr, "gpuq daemon: no HTTP listener: %s; %s. The unix socket serves as usual.\n",
               listening.error().message.c_str(), fix.c_str());
  nlohmann::json data = {{"listen", setup.address->text()}, {"error", listening.error().message}, {"fix", fix}};
  if (auto recorded = queue.record_event("daemon.http_failed", std::nullopt, std::move(data)); !recorded) {
    std::fprintf(stderr, "gpuq daemon: recording daemon.http_failed: %s\n", recorded.error().message.c_str());
  }
  return fmt::format("  http: off ({} is in use; see event daemon.http_failed)\n", setup.address->text());
}

}  // namespace gpuq::app
