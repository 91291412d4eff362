// SPDX-License-Identifier: Apache-2.0
#include "api/http_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "api/browser_sessions.h"
#include "api/user_sessions.h"
#include "base/ascii.h"
#include "web/assets.h"

namespace gpuq::api {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

template <class Name>
std::string_view field(const Request& request, Name name) {
  auto it = request.find(name);
  return it == request.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

// {"error":{"code","message"}} with a code more precise than base/status.h's.
Response refusal(http::status status, std::string_view code, std::string message) {
  Response res = json_response(status, {{"error", {{"code", code}, {"message", std::move(message)}}}});
  add_tcp_headers(res, true);
  return res;
}

bool is_read(const Request& request) {
  return request.method() == http::verb::get || request.method() == http::verb::head;
}

// Whether the client accepts gzip (Accept-Encoding names gzip, not with q=0).
bool accepts_gzip(std::string_view accept) {
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view item = trim(accept.substr(0, comma));
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    size_t semi = item.find(';');
    if (ascii_lower(trim(item.substr(0, semi))) != "gzip") continue;
    if (semi == std::string_view::npos) return true;
    std::string params = ascii_lower(item.substr(semi + 1));
    params.erase(std::remove(params.begin(), params.end(), ' '), params.end());
    return params != "q=0" && params != "q=0.0" && params != "q=0.00" && params != "q=0.000";
  }
  return false;
}

// Whether If-None-Match (a list of entity tags, or *) names `etag`.
bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  while (!if_none_match.empty()) {
    size_t comma = if_none_match.find(',');
    std::string_view item = trim(if_none_match.substr(0, comma));
    if_none_match = comma == std::string_view::npos ? std::string_view() : if_none_match.substr(comma + 1);
    if (item.starts_with("W/")) item.remove_prefix(2);
    if (item == "*" || item == etag) return true;
  }
  return false;
}

Response static_file(const web::Asset& asset, const Request& request) {
  bool gzip = !asset.gzip_body.empty() && accepts_gzip(field(request, http::field::accept_encoding));
  Response res{http::status::ok, 11};
  // The gzip copy is another representation, so another strong validator: "HASH" -> "HASH-gz".
  std::string etag(asset.etag);
  if (gzip) etag.insert(etag.size() - 1, "-gz");
  if (etag_matches(field(request, http::field::if_none_match), etag)) {
    res.result(http::status::not_modified);
  } else {
    res.set(http::field::content_type, std::string(asset.content_type));
    res.body() = std::string(gzip ? asset.gzip_body : asset.body);
    if (gzip) res.set(http::field::content_encoding, "gzip");
  }
  res.set(http::field::etag, etag);
  res.set(http::field::vary, "Accept-Encoding");
  res.set(http::field::cache_control, "no-cache");
  add_tcp_headers(res, false);
  return res;
}

// The tokens the request shows in Authorization: Bearer headers. A query string never carries
// one (?token=... would be kept in browser history, proxies' and servers' logs, and Referer
// headers), and a cookie never does (a cookie is sent to every port of the host: it carries a
// browser session's value instead).
std::vector<std::string_view> bearer_tokens(const Request& request) {
  std::vector<std::string_view> shown;
  for (auto [f, end] = request.equal_range(http::field::authorization); f != end; ++f) {
    std::string_view value = trim(std::string_view(f->value().data(), f->value().size()));
    if (value.size() > 7 && ascii_lower(value.substr(0, 7)) == "bearer ") shown.push_back(trim(value.substr(7)));
  }
  return shown;
}

// The values of every cookie named `name` the request carries.
std::vector<std::string_view> cookie_values(const Request& request, std::string_view name) {
  std::vector<std::string_view> values;
  for (auto [f, end] = request.equal_range(http::field::cookie); f != end; ++f) {
    std::string_view cookies(f->value().data(), f->value().size());
    while (!cookies.empty()) {
      size_t semi = cookies.find(';');
      std::string_view pair = trim(cookies.substr(0, semi));
      cookies = semi == std::string_view::npos ? std::string_view() : cookies.substr(semi + 1);
      size_t eq = pair.find('=');
      if (eq != std::string_view::npos && trim(pair.substr(0, eq)) == name) values.push_back(trim(pair.substr(eq + 1)));
    }
  }
  return values;
}

// POST /v1/session: a new browser session for whoever the request showed (the session it
// showed, if any, ends: a sign-in renews it), its cookie set and the token's old cookie cleared.
Response open_session(const TcpPolicy& policy, const TcpIdentity& identity) {
  if (!policy.browser_sessions) {
    return refusal(http::status::service_unavailable, "unavailable", "this daemon keeps no browser sessions");
  }
  if (!identity.session.empty()) (void)policy.browser_sessions->end(identity.session);
  auto value = policy.browser_sessions->open({identity.user, identity.uid}, policy.wall_ms());
  if (!value) {
    return refusal(http::status::service_unavailable, "unavailable",
                   fmt::format("the daemon cannot save the browser session: {}", value.error().message));
  }
  Response res{http::status::no_content, 11};
  res.insert(http::field::set_cookie,
             fmt::format("{}={}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}", policy.cookie_name, *value,
                         kBrowserSessionMaxAgeMs / 1000));
  res.insert(http::field::set_cookie,
             fmt::format("{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0", kLegacyTokenCookie));
  add_tcp_headers(res, true);
  return res;
}

// POST /v1/session/end: the session the request showed ends and its cookie is cleared.
Response end_session(const TcpPolicy& policy, const TcpIdentity& identity) {
  if (policy.browser_sessions && !identity.session.empty()) {
    auto ended = policy.browser_sessions->end(identity.session);
    if (!ended) {
      return refusal(http::status::service_unavailable, "unavailable",
                     fmt::format("the daemon cannot end the browser session: {}", ended.error().message));
    }
  }
  Response res{http::status::no_content, 11};
  res.insert(http::field::set_cookie, fmt::format("{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0", policy.cookie_name));
  add_tcp_headers(res, true);
  return res;
}

}  // namespace

TcpPolicy TcpPolicy::make(std::string token, const ListenAddress& listen,
                          const std::vector<std::string>& extra_hosts, bool allow_submit) {
  TcpPolicy policy;
  policy.token = std::move(token);
  policy.allow_submit = allow_submit;
  policy.allowed_hosts = {"localhost", "127.0.0.1", "[::1]", ascii_lower(listen.host_header())};
  for (const std::string& host : extra_hosts) policy.allowed_hosts.push_back(ascii_lower(host));
  return policy;
}

std::string host_part(std::string_view host) {
  host = trim(host);
  size_t end = host.starts_with("[") ? host.find(']') : host.find(':');
  if (host.starts_with("[")) end = end == std::string_view::npos ? host.size() : end + 1;
  std::string_view name = host.substr(0, end);
  std::string_view rest = end == std::string_view::npos ? std::string_view() : host.substr(end);
  // After the name, only a port (":" and at most five digits, as RFC 9110's Host allows).
  if (!rest.empty()) {
    std::string_view port = rest.substr(1);
    bool digits = std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (rest.front() != ':' || port.size() > 5 || !digits) return "";
  }
  return ascii_lower(name);
}

namespace {

// Compares every byte of `expected` with the byte of `given` at the same place (0 past its
// end), with no branch on their values; `compared` counts the bytes compared.
bool compare_all_bytes(std::string_view given, std::string_view expected, size_t& compared) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  compared = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(expected[i]));
    ++compared;
  }
  return diff == 0;
}

}  // namespace

bool constant_time_equal(std::string_view given, std::string_view expected) {
  size_t compared = 0;
  return compare_all_bytes(given, expected, compared);
}

size_t constant_time_compared_bytes(std::string_view given, std::string_view expected) {
  size_t compared = 0;
  compare_all_bytes(given, expected, compared);
  return compared;
}

std::optional<TcpIdentity> tcp_identity(const TcpPolicy& policy, const Request& request) {
  std::optional<TcpIdentity> found;
  for (std::string_view given : bearer_tokens(request)) {
    // Every candidate is compared with every token: the time tells nothing of which matched.
    bool daemon = constant_time_equal(given, policy.token);
    std::optional<UserSession> user = policy.sessions ? policy.sessions->find(given) : std::nullopt;
    if (found) continue;
    if (daemon) {
      found = TcpIdentity{std::string(given), "", "", 0};
    } else if (user) {
      found = TcpIdentity{std::string(given), "", user->user, user->uid};
    }
  }
  if (!policy.browser_sessions) return found;
  for (std::string_view value : cookie_values(request, policy.cookie_name)) {
    auto who = policy.browser_sessions->use(value, policy.wall_ms());
    if (!who) continue;
    if (!found) found = TcpIdentity{"", std::string(value), who->user, who->uid};
    else if (found->session.empty() && found->user == who->user) found->session = std::string(value);
    break;
  }
  return found;
}

bool request_shows_token(const TcpPolicy& policy, const Request& request) {
  return tcp_identity(policy, request).has_value();
}

void add_tcp_headers(http::fields& fields, bool api) {
  fields.set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'");
  fields.set("X-Content-Type-Options", "nosniff");
  fields.set("Referrer-Policy", "no-referrer");
  fields.set("X-Frame-Options", "DENY");
  if (api) fields.set(http::field::cache_control, "no-store");
}

std::optional<Response> judge_tcp_request(const TcpPolicy& policy, const Request& request) {
  // 1. The Host header: a page of another site that a DNS trick points at this address still
  // carries that site's name here. Exactly one: with two, a proxy and this daemon could each
  // believe another.
  if (request.count(http::field::host) != 1) {
    return refusal(http::status::bad_request, "bad_host",
                   fmt::format("a request must carry exactly one Host header (this one has {}): "
                               "send Host: 127.0.0.1:PORT",
                               request.count(http::field::host)));
  }
  std::string_view host = field(request, http::field::host);
  std::string name = host_part(host);
  if (name.empty() || std::find(policy.allowed_hosts.begin(), policy.allowed_hosts.end(), name) ==
                          policy.allowed_hosts.end()) {
    return refusal(http::status::forbidden, "forbidden_host",
                   fmt::format("this daemon does not answer to the host name '{}': use "
                               "http://127.0.0.1:PORT or http://localhost:PORT, or add the name "
                               "to [http] allowed_hosts in the daemon's config.toml",
                               clip_for_message(name)));
  }
  // 2. A path, not a URL or an authority: this daemon is no proxy, and a request for
  // http://other/ must not be answered as if it were for this daemon.
  std::string_view target(request.target().data(), request.target().size());
  if (!target.starts_with('/')) {
    return refusal(http::status::bad_request, "bad_target",
                   fmt::format("the request target '{}' is not a path: this daemon is not a "
                               "proxy; ask for a path such as /v1/status",
                               clip_for_message(target)));
  }
  // 3. The methods the API and the dashboard use. OPTIONS gets no CORS answer (no other
  // origin may call this daemon), TRACE would echo the request (cookies included) into a
  // page, CONNECT would open a tunnel.
  if (request.method() != http::verb::get && request.method() != http::verb::head &&
      request.method() != http::verb::post) {
    Response res = refusal(http::status::method_not_allowed, "method_not_allowed",
                           fmt::format("the method {} is not served: this daemon answers GET, "
                                       "HEAD and POST",
                                       clip_for_message(std::string_view(request.method_string().data(),
                                                                         request.method_string().size()))));
    res.set(http::field::allow, "GET, HEAD, POST");
    return res;
  }
  // 4. The dashboard's files: the same bytes in every install, no data in them.
  std::string_view path = target.substr(0, target.find('?'));
  if (is_read(request)) {
    if (const web::Asset* asset = web::find_asset(path)) return static_file(*asset, request);
  }
  // 5. The token.
  auto identity = tcp_identity(policy, request);
  if (!identity) {
    return refusal(http::status::unauthorized, "unauthenticated",
                   "this needs the daemon's token: open the link `gpuq dashboard` prints, or send "
                   "the header Authorization: Bearer followed by the contents of the daemon's "
                   "$GPUQ_HOME/token");
  }
  // 6. A request that changes something comes from the dashboard's own page (or the CLI).
  if (!is_read(request)) {
    std::string expected = fmt::format("http://{}", trim(host));
    if (field(request, http::field::origin) != expected) {
      return refusal(http::status::forbidden, "forbidden_origin",
                     fmt::format("a request that changes something must come from the "
                                 "dashboard's own page: its Origin header must be {}",
                                 clip_for_message(expected)));
    }
    if (trim(field(request, "X-Gpuq-Csrf")) != "1") {
      return refusal(http::status::forbidden, "csrf_missing",
                     "a request that changes something must carry the header X-Gpuq-Csrf: 1");
    }
  }
  // 7. Submitting runs commands as the daemon's user: only when the daemon was started so.
  Route where = route(request.method(), target);
  if ((where.endpoint == Endpoint::kSubmit || where.endpoint == Endpoint::kPlan) && !policy.allow_submit) {
    return refusal(http::status::forbidden, "submit_disabled",
                   "submitting jobs over TCP is off: start the daemon with --http-allow-submit "
                   "(or [http] allow_submit = true in config.toml), or submit on the daemon's "
                   "machine with gpuq submit");
  }
  // A token is given only for a token: a session's cookie (which a server on another port of
  // the host may have seen) cannot be traded for a box user's lasting dashboard token.
  if (where.endpoint == Endpoint::kDashboardSession && identity->token.empty()) {
    return refusal(http::status::forbidden, "permission_denied",
                   "a browser session cannot ask for a dashboard token: run gpuq dashboard on the "
                   "daemon's machine");
  }
  // The session cookie of the dashboard's page.
  const auto& s = where.target.segments;
  if (request.method() == http::verb::post && s.size() >= 2 && s[0] == "v1" && s[1] == "session") {
    if (s.size() == 2) {
      // Only the token opens a session: a session that could open the next would never end.
      if (identity->token.empty()) {
        return refusal(http::status::unauthorized, "unauthenticated",
                       "a session is opened with the token of the link `gpuq dashboard` prints, "
                       "not with another session");
      }
      return open_session(policy, *identity);
    }
    if (s.size() == 3 && s[2] == "end") return end_session(policy, *identity);
  }
  return std::nullopt;
}

}  // namespace gpuq::api
