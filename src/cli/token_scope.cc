// SPDX-License-Identifier: Apache-2.0
#include "cli/token_scope.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "base/ascii.h"
#include "base/listen_address.h"

namespace gpuq::cli {
namespace {

struct UrlHost {
  std::string host;  // lower-cased; an IPv6 literal without its brackets
  int port = 80;     // http's when the URL names none
};

// The host and port of a URL's authority: "HOST:PORT", "[V6]:PORT", "HOST" or "[V6]".
std::optional<UrlHost> url_host(std::string_view authority) {
  UrlHost out;
  std::string_view port;
  if (authority.starts_with('[')) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = ascii_lower(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return std::nullopt;
    if (!rest.empty()) port = rest.substr(1);
  } else {
    auto colon = authority.find(':');
    if (colon != std::string_view::npos &&
        authority.find(':', colon + 1) != std::string_view::npos) {
      return std::nullopt;  // an IPv6 literal must be in brackets
    }
    out.host = ascii_lower(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return std::nullopt;
  if (port.empty()) return out;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (ec != std::errc() || end != port.data() + port.size() || out.port < 1 || out.port > 65535) {
    return std::nullopt;
  }
  return out;
}

}  // namespace

bool token_may_go_to(const DaemonUrl& url, std::string_view listen) {
  if (!url.base.starts_with("http://") || listen.empty()) return false;
  auto parsed = parse_listen_address(listen);
  if (!parsed || !*parsed) return false;
  const ListenAddress& record = **parsed;
  auto target = url_host(url.authority);
  if (!target || target->port != record.port) return false;
  if (target->host == record.host) return true;
  // A listener on every address holds the port on that family's loopback too; nothing else
  // does: `localhost` may resolve to the other family, where another user may listen.
  return (record.host == "0.0.0.0" && target->host == "127.0.0.1") ||
         (record.host == "::" && target->host == "::1");
}

std::string token_withheld_reason(const DaemonUrl& url, std::string_view listen,
                                  const HomeLayout& home) {
  if (listen.empty()) {
    return fmt::format(
        "no token was sent: the home's token ({}) goes only to the daemon whose address is "
        "recorded in {}, and there is none (a daemon older than this gpuq, or one without an HTTP "
        "listener: restart it); pass the token with $GPUQ_TOKEN if {} is that daemon",
        home.token(), home.token_listen(), url.authority);
  }
  return fmt::format(
      "no token was sent: the home's token ({}) was made for the daemon at {} and is not sent to "
      "{}; pass it with $GPUQ_TOKEN if this is that daemon",
      home.token(), listen, url.authority);
}

}  // namespace gpuq::cli
