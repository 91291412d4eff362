// The real Transport: libcurl over the daemon's unix socket (CURLOPT_UNIX_SOCKET_PATH), with
// URLs "http://gpuq/v1/...", or over TCP to the daemon's HTTP listener with its token. One CURL handle is kept and reused, so consecutive requests share
// a connection. Connects time out after kConnectTimeout; each request carries its own timeout.
// Before each request the socket is looked at: it must exist, be a socket, and belong to this
// user or root (check_socket_owner, transport.h), so nothing is sent to another user's daemon.
// Owns its CURL handle; not thread-safe (one thread at a time, like the CLI itself).
#pragma once

#include <memory>
#include <string>

#include "cli/transport.h"

namespace gpuq::cli {

constexpr Millis kConnectTimeout{5'000};

class CurlTransport final : public Transport {
 public:
  // Fails only when libcurl cannot make a handle.
  static Result<std::unique_ptr<Transport>> create(std::string socket_path);
  // Over TCP to the daemon's HTTP listener at `url` (transport.h's DaemonUrl), with the token
  // as `Authorization: Bearer`; a POST also carries `Origin: <url>` and `X-Gpuq-Csrf: 1`, as the
  // listener's policy asks of every request that changes something.
  static Result<std::unique_ptr<Transport>> create_tcp(DaemonUrl url, std::string token);
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  Result<HttpResponse> send(const HttpRequest& request) override;

 private:
  CurlTransport(void* handle, std::string socket_path, DaemonUrl url, std::string token);

  void* handle_;  // CURL*; void* keeps <curl/curl.h> out of this header
  std::string socket_path_;  // empty over TCP
  DaemonUrl url_;            // empty over the unix socket
  std::string token_;
};

}  // namespace gpuq::cli
