// SPDX-License-Identifier: Apache-2.0
// HTTP over a real TCP socket to a daemon started with --http 127.0.0.1:0, for end-to-end tests
// of the TCP listener, its policy and its connection classes: requests with libcurl (any
// headers, as a browser or another program would send them), raw bytes for what no client
// library sends (two Host headers, smuggled bodies, absolute-form targets), and bare
// connections for floods. Synchronous; calls may run on several threads at once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace gpuq::testing {

struct TcpAnswer {
  int curl_code = -1;
  long status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

// `method` `url` over TCP with `headers`; a POST sends `body`. Any other method is sent as it
// is (CURLOPT_CUSTOMREQUEST).
TcpAnswer tcp_request(const std::string& method, const std::string& url,
                      const std::vector<std::string>& headers = {}, const std::string& body = "",
                      bool stop_at_first_frame = false);

// The "code" of a JSON error body; "" for any other body.
std::string code_of(const std::string& body);
inline std::string code_of(const TcpAnswer& answer) { return code_of(answer.body); }

// What came back for raw bytes: everything the daemon sent until it closed the connection
// (or `timeout_ms` passed), and the answers found in it.
struct RawAnswer {
  std::string text;
  bool closed = false;        // the daemon closed the connection
  std::vector<int> statuses;  // the status of each answer, in order
  int status() const { return statuses.empty() ? 0 : statuses.front(); }
  // The JSON body of the first answer.
  std::string body() const;
};

// Sends `bytes` on a new connection to `listen` ("127.0.0.1:PORT") and reads until the daemon
// closes it or `timeout_ms` passes.
RawAnswer raw_exchange(const std::string& listen, std::string_view bytes, int timeout_ms = 10'000);

// A bare connection to `listen` (the caller closes it); -1 when connecting fails.
int tcp_connect(const std::string& listen);

// The value of the sample `name{class="cls"}` in the daemon's /metrics (asked on its unix
// socket); -1 when absent.
double connection_metric(const Harness& h, const std::string& name, const std::string& cls);

// The text of the file at `path`, less its trailing newlines.
std::string read_text(const std::string& path);

// A daemon with a TCP listener on a free port.
class TcpDaemon {
 public:
  explicit TcpDaemon(Harness& h, std::vector<std::string> flags = {});
  std::string url(const std::string& path) const { return "http://" + listen_ + path; }
  std::string bearer() const { return "Authorization: Bearer " + token_; }
  // The header a signed-in page sends: the cookie of a browser session opened at the start.
  std::string cookie() const { return "Cookie: " + session_cookie_; }
  // "gpuq_session_PORT=VALUE"; empty when the daemon opened no session.
  const std::string& session_cookie() const { return session_cookie_; }
  // The headers the dashboard's page sends with a POST.
  std::vector<std::string> page_post() const {
    return {bearer(), "Origin: http://" + listen_, "X-Gpuq-Csrf: 1", "Content-Type: application/json"};
  }
  const std::string& listen() const { return listen_; }
  std::string port() const { return listen_.substr(listen_.rfind(':') + 1); }
  const std::string& token() const { return token_; }

 private:
  std::string listen_;
  std::string token_;
  std::string session_cookie_;
};

}  // namespace gpuq::testing
