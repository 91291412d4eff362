// SPDX-License-Identifier: Apache-2.0
// The TCP listener's security policy (docs/api.md, "HTTP listener and the dashboard"; the
// attacks it stops, one by one, in docs/dashboard.md, "Attacks and what stops them"): what a
// request that arrives over TCP must show before it reaches the API's handlers, and the headers
// every TCP answer carries. In order: exactly one Host header, and an allowed one (against DNS
// rebinding); a request target that is a path (this is not a proxy: no absolute-form,
// authority-form or `*`); the methods GET, HEAD and POST only (no OPTIONS, TRACE or CONNECT);
// the dashboard's static files, served without a token; the token in a Bearer header
// (compared in constant time, never from a query string) or a browser session's cookie
// (api/browser_sessions.h: never the token itself); for anything but GET and HEAD, an Origin
// equal to http://HOST and the header X-Gpuq-Csrf: 1; job and plan submits only when allowed.
// It also answers POST /v1/session (opens a browser session, sets its cookie) and
// /v1/session/end (ends it, clears the cookie). It judges a request's head alone: the server
// reads no body before it. The unix socket needs none of this: the kernel says who the peer is
// (SO_PEERCRED). Functions of a request and the policy (no socket); thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "api/http.h"
#include "base/listen_address.h"
#include "base/time.h"

namespace gpuq::api {

class BrowserSessions;
class UserSessions;

struct TcpPolicy {
  std::string token;                       // 64 hex characters (base/token_file.h)
  // A system daemon's users' dashboard tokens (api/user_sessions.h), accepted beside `token`;
  // null: only `token`.
  std::shared_ptr<UserSessions> sessions;
  // The browser sessions the dashboard's pages sign in with; null: POST /v1/session answers
  // 503 and no cookie is accepted.
  std::shared_ptr<BrowserSessions> browser_sessions;
  // The session cookie's name, one per listener ("gpuq_session_7878"): a browser keeps cookies
  // by host, not by port, so two daemons on one machine must not overwrite each other's.
  std::string cookie_name = "gpuq_session";
  std::function<int64_t()> wall_ms = wall_now_ms;  // the clock of the sessions' expiry
  std::vector<std::string> allowed_hosts;  // lower-case host parts: "localhost", "[::1]", ...
  bool allow_submit = false;               // POST /v1/jobs and /v1/plans

  // localhost, 127.0.0.1, [::1], the listen address's host and `extra_hosts`, lower-cased.
  static TcpPolicy make(std::string token, const ListenAddress& listen,
                        const std::vector<std::string>& extra_hosts, bool allow_submit);
};

// The host part of a Host header's value, lower-cased: "Box.lan:7878" -> "box.lan",
// "[::1]:7878" -> "[::1]".
std::string host_part(std::string_view host);

// Whether `given` equals `expected`, in time that depends on `expected`'s length only.
bool constant_time_equal(std::string_view given, std::string_view expected);
// The bytes constant_time_equal() compares for these arguments: always expected.size(),
// whatever `given` is (how the tests pin that its time tells nothing about `given`).
size_t constant_time_compared_bytes(std::string_view given, std::string_view expected);

// Whether the request shows the token (a Bearer header: the daemon's or a box user's
// dashboard token) or an open browser session's cookie.
bool request_shows_token(const TcpPolicy& policy, const Request& request);

// Whose token or session a request shows: the daemon's (`user` empty), or a box user's.
struct TcpIdentity {
  std::string token;    // the token shown in a Bearer header, empty when a cookie showed it
  std::string session;  // the browser session's cookie value shown, empty when none
  std::string user;     // "" for the daemon's own token
  uid_t uid = 0;
};
std::optional<TcpIdentity> tcp_identity(const TcpPolicy& policy, const Request& request);

// What to answer at once to a request that came over TCP: a refusal (400 bad_host,
// 403 forbidden_host, 400 bad_target, 405 method_not_allowed, 401 unauthenticated,
// 403 forbidden_origin / csrf_missing / submit_disabled), a static file
// (200 or 304), or the session endpoints (204; 503 when a session cannot be saved). nullopt: the request may go to the API
// (Server::handle). An answer returned here already carries the TCP headers.
std::optional<Response> judge_tcp_request(const TcpPolicy& policy, const Request& request);

// The headers of every TCP answer: Content-Security-Policy, X-Content-Type-Options,
// Referrer-Policy, X-Frame-Options; and, for an API answer (`api`), Cache-Control: no-store.
void add_tcp_headers(http::fields& fields, bool api);

// The cookie that carried the daemon's token itself before browser sessions: cleared when a
// session opens, never read.
inline constexpr std::string_view kLegacyTokenCookie = "gpuq_token";

}  // namespace gpuq::api
