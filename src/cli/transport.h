// The CLI's only way to reach the daemon: one HTTP request at a time over the daemon's unix
// socket. `Transport` is an interface so that command tests can script the daemon's answers
// (see FakeTransport in cli tests) while `CurlTransport` (curl_transport.h) does the real I/O.
// A Transport is used by one thread at a time; it owns its connection state.
#pragma once

#include <map>
#include <string>

#include "base/duration.h"
#include "base/status.h"

namespace gpuq::cli {

enum class Method { kGet, kPost };

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
