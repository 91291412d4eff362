// SPDX-License-Identifier: Apache-2.0
// The HTTP listener's address as a person writes it (`gpuq daemon --http`, config.toml's
// `[http] listen`): "127.0.0.1:7878", "[::1]:7878", "0.0.0.0:0" (port 0: any free port),
// "localhost:7878" (read as 127.0.0.1), or "off". Only IP literals and "localhost": the daemon
// never resolves a host name to pick where to listen. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq {

// Where the daemon listens by default.
inline constexpr std::string_view kDefaultHttpListen = "127.0.0.1:7878";

struct ListenAddress {
  std::string host;  // the IP literal, IPv6 without brackets ("::1"); "localhost" -> "127.0.0.1"
  uint16_t port = 0;
  bool ipv6 = false;
  // "127.0.0.1:7878" or "[::1]:7878".
  std::string text() const;
  // The host part as a Host header carries it: "127.0.0.1", "[::1]".
  std::string host_header() const;
  // Whether only this machine can connect: 127.0.0.0/8 or ::1 (IPv4-mapped 127.x too).
  bool loopback() const;
};

// nullopt for "off"; an address; or Code::kInvalidArgument saying what form to use.
Result<std::optional<ListenAddress>> parse_listen_address(std::string_view text);

}  // namespace gpuq
