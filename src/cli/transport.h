// SPDX-License-Identifier: Apache-2.0
// The CLI's only way to reach the daemon: one HTTP request at a time over the daemon's unix
// socket, or over TCP to its HTTP listener (`gpuq --url`). `Transport` is an interface so that command tests can script the daemon's answers
// (see FakeTransport in cli tests) while `SocketTransport` (socket_transport.h: the unix socket)
// and `CurlTransport` (curl_transport.h: TCP, `gpuq --url`) do the real I/O.
// A Transport is used by one thread at a time; it owns its connection state.
#pragma once

#include <map>
#include <string>
#include <sys/types.h>

#include "base/duration.h"
#include "base/status.h"

namespace gpuq::cli {

enum class Method { kGet, kPost };

// How long a transport waits for a connection to be made, whatever the request's own timeout.
constexpr Millis kConnectTimeout{5'000};

struct HttpRequest {
  Method method = Method::kGet;
  std::string target;  // "/v1/status?x=1": path and query, already percent-encoded
  std::string body;    // JSON for POST; empty for GET
  Millis timeout{30'000};
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased; the last value wins
  std::string body;

  // The value of header `name` (any case), or "" when absent.
  std::string header(std::string_view name) const;
};

// Refuses a daemon socket that belongs to another user, before connecting to it: what the CLI
// sends (a job's environment, tokens included) must reach the user's own daemon, not one that
// another user started or a socket someone put in its place. Accepted: a socket owned by
// `cli_uid`, or by root (a system daemon); a root CLI (`cli_uid` 0) may use any. Otherwise
// Code::kFailedPrecondition naming the socket, its owner and what to do.
Status check_socket_owner(const std::string& path, uid_t owner, uid_t cli_uid);

// What every unix-socket request checks first, so that its error names the real cause: the
// socket exists (else kUnavailable "no socket at PATH"), is a socket (else kUnavailable), and
// passes check_socket_owner for this process's effective uid.
Status check_daemon_socket(const std::string& path);

// A daemon's HTTP listener as `gpuq --url` names it: "http://HOST:PORT" (a trailing "/" is
// dropped). `base` is "http://HOST:PORT", `authority` "HOST:PORT" (what the Host and Origin
// headers carry). Only plain http: the listener has no TLS (reach a remote one through an ssh
// tunnel). Code::kInvalidArgument saying the form otherwise.
struct DaemonUrl {
  std::string base;
  std::string authority;
};
Result<DaemonUrl> parse_daemon_url(std::string_view text);

class Transport {
 public:
  virtual ~Transport() = default;

  // Sends one request and returns the daemon's answer, whatever its HTTP status.
  // Errors: kUnavailable when nothing could be reached (no socket, nothing listening; the
  // message says which), kFailedPrecondition when the socket refused us (permissions),
  // kIoError for anything else (timeouts, a connection dropped mid-answer).
  virtual Result<HttpResponse> send(const HttpRequest& request) = 0;
};

}  // namespace gpuq::cli
