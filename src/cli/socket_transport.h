// SPDX-License-Identifier: Apache-2.0
// The Transport the CLI uses to reach the local daemon: HTTP/1.1 over the daemon's unix socket,
// with Boost.Beast's parser and Asio's socket (no libcurl, so a command that only talks to the
// local daemon loads no library it does not use). Same contract as the other transports
// (transport.h): before each request check_daemon_socket looks at the socket, so nothing is
// sent to another user's daemon; a connect waits at most kConnectTimeout; each request, connect
// included, ends within its own timeout (long-polls give a long one); the connection is kept
// open between requests while the daemon keeps it alive, and a kept connection that the daemon
// closed while idle is replaced once, before any byte of the answer has come. Beast and Asio
// stay in socket_transport.cc (they compile slowly): this header names neither.
// Owns its connection; not thread-safe (one thread at a time, like the CLI itself).
#pragma once

#include <memory>
#include <string>

#include "cli/transport.h"

namespace gpuq::cli {

class SocketTransport final : public Transport {
 public:
  static std::unique_ptr<Transport> create(std::string socket_path);
  ~SocketTransport() override;
  SocketTransport(const SocketTransport&) = delete;
  SocketTransport& operator=(const SocketTransport&) = delete;

  Result<HttpResponse> send(const HttpRequest& request) override;

  // The io_context, the socket and what was read past an answer; defined in the .cc (public
  // only so that its helper functions there can name it).
  struct Connection;

 private:
  explicit SocketTransport(std::string socket_path);

  std::string socket_path_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace gpuq::cli
