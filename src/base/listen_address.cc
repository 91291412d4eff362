// SPDX-License-Identifier: Apache-2.0
#include "base/listen_address.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <charconv>

namespace gpuq {

std::string ListenAddress::host_header() const { return ipv6 ? "[" + host + "]" : host; }

std::string ListenAddress::text() const { return fmt::format("{}:{}", host_header(), port); }

bool ListenAddress::loopback() const {
  if (!ipv6) return host.rfind("127.", 0) == 0;
  return host == "::1" || host.rfind("::ffff:127.", 0) == 0;
}

Result<std::optional<ListenAddress>> parse_listen_address(std::string_view text) {
  if (text == "off") return std::optional<ListenAddress>();
  auto bad = [&](std::string_view why) {
    return fail(Code::kInvalidArgument,
                fmt::format("bad HTTP listen address '{}': {}; write ADDR:PORT such as {}, "
                            "0.0.0.0:7878 (every interface), [::1]:7878, or off",
                            clip_for_message(text), why, kDefaultHttpListen));
  };
  ListenAddress out;
  std::string_view host, port;
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return bad("an IPv6 address goes in brackets, followed by :PORT");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    out.ipv6 = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad("no :PORT");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return bad("an IPv6 address goes in brackets");
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return bad("the port must be a number from 0 to 65535 (0: any free port)");
  }
  out.port = static_cast<uint16_t>(value);
  out.host = std::string(host);
  if (!out.ipv6 && out.host == "localhost") out.host = "127.0.0.1";
  unsigned char buffer[16];
  if (::inet_pton(out.ipv6 ? AF_INET6 : AF_INET, out.host.c_str(), buffer) != 1) {
    return bad(out.ipv6 ? "not an IPv6 address"
                        : "not an IPv4 address (host names are not resolved; localhost is "
                          "127.0.0.1)");
  }
  return std::optional<ListenAddress>(std::move(out));
}

}  // namespace gpuq
