// SPDX-License-Identifier: Apache-2.0
// The Transport of `gpuq --url`: libcurl (loaded at the first create: base/libcurl.h) over TCP
// to the daemon's HTTP listener with its token; the CLI reaches the local daemon through
// SocketTransport (socket_transport.h) instead. create() still speaks over the unix socket
// (CURLOPT_UNIX_SOCKET_PATH, URLs "http://gpuq/v1/..."), for benchmarks that compare the two.
// One CURL handle is kept and reused, so consecutive requests share a connection. Connects time
// out after kConnectTimeout; each request carries its own timeout. Before each request on the
// socket, check_daemon_socket (transport.h) looks at it, so nothing is sent to another user's
// daemon.
// Owns its CURL handle; not thread-safe (one thread at a time, like the CLI itself).
#pragma once

#include <memory>
#include <utility>
#include <string>

#include "cli/transport.h"

namespace gpuq {
struct CurlApi;
}

namespace gpuq::cli {

class CurlTransport final : public Transport {
 public:
  // Fails when libcurl is missing (Code::kUnavailable, naming its package) or cannot make a handle.
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
  CurlTransport(const CurlApi* lib, void* handle, std::string socket_path, DaemonUrl url,
                std::string token);

  const CurlApi* lib_;  // libcurl, loaded at the first create (base/libcurl.h)
  void* handle_;  // CURL*; void* keeps <curl/curl.h> out of this header
  std::string socket_path_;  // empty over TCP
  DaemonUrl url_;            // empty over the unix socket
  std::string token_;
};

}  // namespace gpuq::cli
