// SPDX-License-Identifier: Apache-2.0
// The TCP listener's policy on hand-made requests (no socket, no daemon).
#include "api/http_policy.h"

#include <gtest/gtest.h>

#include "web/assets.h"

namespace gpuq::api {
namespace {

const std::string kToken(64, 'a');

TcpPolicy policy(bool allow_submit = false) {
  ListenAddress listen{"0.0.0.0", 7878, false};
  return TcpPolicy::make(kToken, listen, {"Box.lan"}, allow_submit);
}

Request request(http::verb method, std::string target, std::string host = "127.0.0.1:7878") {
  Request r{method, target, 11};
  if (!host.empty()) r.set(http::field::host, host);
  return r;
}

Request with_token(Request r) {
  r.set(http::field::authorization, "Bearer " + kToken);
  return r;
}

// A POST as the dashboard's page sends it.
Request page_post(std::string target, std::string host = "127.0.0.1:7878") {
  Request r = with_token(request(http::verb::post, std::move(target), host));
  r.set(http::field::origin, "http://" + host);
  r.set("X-Gpuq-Csrf", "1");
  return r;
}

template <class Name>
std::string hdr(const Response& r, Name name) {
  auto value = r[name];
  return std::string(value.data(), value.size());
}

std::string code_of(const Response& r) {
  return nlohmann::json::parse(r.body())["error"]["code"].get<std::string>();
}

TEST(HttpPolicy, ExactlyOneHostHeader) {
  Request none = with_token(request(http::verb::get, "/v1/status", ""));
  auto refused = judge_tcp_request(policy(), none);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->result(), http::status::bad_request);
  EXPECT_EQ(code_of(*refused), "bad_host");
  Request two = with_token(request(http::verb::get, "/v1/status"));
  two.insert(http::field::host, "evil.example");
  refused = judge_tcp_request(policy(), two);
  ASSERT_TRUE(refused);
  EXPECT_EQ(code_of(*refused), "bad_host");
  EXPECT_FALSE(judge_tcp_request(policy(), with_token(request(http::verb::get, "/v1/status"))));
}

TEST(HttpPolicy, TheTargetIsAPath) {
  for (std::string target : {"http://evil.example/v1/status", "http://127.0.0.1:7878/", "evil.example:443", "*"}) {
    auto refused = judge_tcp_request(policy(), with_token(request(http::verb::get, target)));
    ASSERT_TRUE(refused) << target;
    EXPECT_EQ(refused->result(), http::status::bad_request) << target;
    EXPECT_EQ(code_of(*refused), "bad_target") << target;
  }
}

TEST(HttpPolicy, OnlyGetHeadAndPost) {
  for (http::verb method : {http::verb::options, http::verb::trace, http::verb::put, http::verb::delete_,
                            http::verb::patch, http::verb::propfind}) {
    auto refused = judge_tcp_request(policy(), with_token(request(method, "/v1/status")));
    ASSERT_TRUE(refused) << http::to_string(method);
    EXPECT_EQ(refused->result(), http::status::method_not_allowed);
    EXPECT_EQ(code_of(*refused), "method_not_allowed");
    EXPECT_EQ(hdr(*refused, http::field::allow), "GET, HEAD, POST");
    EXPECT_EQ(hdr(*refused, http::field::access_control_allow_origin), "");
  }
}

TEST(HttpPolicy, TheTokenCountsFromTheHeaderOrTheCookieNeverTheQuery) {
  EXPECT_TRUE(request_shows_token(policy(), with_token(request(http::verb::get, "/v1/status"))));
  Request cookie = request(http::verb::get, "/v1/status");
  cookie.set(http::field::cookie, "other=1; gpuq_token=" + kToken);
  EXPECT_TRUE(request_shows_token(policy(), cookie));
  Request query = request(http::verb::get, "/v1/status?token=" + kToken + "&gpuq_token=" + kToken);
  EXPECT_FALSE(request_shows_token(policy(), query));
  auto refused = judge_tcp_request(policy(), query);
  ASSERT_TRUE(refused);
  EXPECT_EQ(code_of(*refused), "unauthenticated");
  EXPECT_EQ(refused->body().find(kToken), std::string::npos);
}

TEST(HostPart, StripsThePortAndLowers) {
  EXPECT_EQ(host_part("Box.LAN:7878"), "box.lan");
  EXPECT_EQ(host_part("localhost"), "localhost");
  EXPECT_EQ(host_part("localhost:"), "localhost");
  EXPECT_EQ(host_part("[::1]:7878"), "[::1]");
  EXPECT_EQ(host_part(""), "");
  // What follows the name must be a port: else the value names no host this daemon knows.
  EXPECT_EQ(host_part("127.0.0.1:7878@evil.example"), "");
  EXPECT_EQ(host_part("127.0.0.1:80:80"), "");
  EXPECT_EQ(host_part("[::1]evil"), "");
  EXPECT_EQ(host_part("localhost:123456"), "");
}

// The defence against timing the token: however long what was sent, and wherever it first
// differs, every byte of the token is compared (an early return would compare fewer).
TEST(HttpPolicy, TheTokenComparisonTouchesEveryByteWhateverTheLength) {
  std::string first_differs = kToken;
  first_differs[0] = 'b';
  std::string last_differs = kToken;
  last_differs[63] = 'b';
  for (const std::string& given : {std::string(), std::string("a"), kToken.substr(0, 32), kToken,
                                   first_differs, last_differs, kToken + "a", std::string(10'000, 'a'),
                                   std::string(64, '\0')}) {
    EXPECT_EQ(constant_time_compared_bytes(given, kToken), kToken.size()) << given.size();
  }
}

TEST(ConstantTimeEqual, ComparesWholeStrings) {
  EXPECT_TRUE(constant_time_equal(kToken, kToken));
  EXPECT_FALSE(constant_time_equal(kToken.substr(1), kToken));
  EXPECT_FALSE(constant_time_equal(kToken + "a", kToken));
  EXPECT_FALSE(constant_time_equal("", kToken));
  std::string other = kToken;
  other[63] = 'b';
  EXPECT_FALSE(constant_time_equal(other, kToken));
}

TEST(TcpPolicy, HostMustBeAllowed) {
  TcpPolicy p = policy();
  for (const char* host : {"127.0.0.1:7878", "localhost:7878", "LOCALHOST", "[::1]:7878", "0.0.0.0:7878",
                           "box.lan", "BOX.lan:80"}) {
    EXPECT_FALSE(judge_tcp_request(p, with_token(request(http::verb::get, "/v1/status", host)))) << host;
  }
  for (const char* host : {"evil.example:7878", "127.0.0.1.evil.example", "box.lan.evil",
                           "127.0.0.1:7878@evil.example", "localhost:http", "[::1]x", "[::1]:7878:1"}) {
    auto refused = judge_tcp_request(p, with_token(request(http::verb::get, "/v1/status", host)));
    ASSERT_TRUE(refused) << host;
    EXPECT_EQ(refused->result(), http::status::forbidden);
    EXPECT_EQ(code_of(*refused), "forbidden_host");
  }
  // Before anything else: even the static files.
  auto page = judge_tcp_request(p, request(http::verb::get, "/", "evil.example"));
  ASSERT_TRUE(page);
  EXPECT_EQ(code_of(*page), "forbidden_host");
}

TEST(TcpPolicy, StaticFilesNeedNoToken) {
  TcpPolicy p = policy();
  const web::Asset* index = web::find_asset("/");
  ASSERT_NE(index, nullptr);
  auto page = judge_tcp_request(p, request(http::verb::get, "/"));
  ASSERT_TRUE(page);
  EXPECT_EQ(page->result(), http::status::ok);
  EXPECT_EQ(page->body(), index->body);
  EXPECT_EQ(hdr(*page, http::field::content_type), index->content_type);
  EXPECT_EQ(hdr(*page, http::field::etag), index->etag);
  EXPECT_EQ(hdr(*page, http::field::cache_control), "no-cache");
  EXPECT_EQ(hdr(*page, http::field::vary), "Accept-Encoding");
  EXPECT_EQ(hdr(*page, "Content-Security-Policy"), "default-src 'self'; frame-ancestors 'none'");
  EXPECT_EQ(hdr(*page, "X-Content-Type-Options"), "nosniff");
  EXPECT_TRUE(judge_tcp_request(p, request(http::verb::head, "/index.html?x=1")));

  Request gzip = request(http::verb::get, "/index.html");
  gzip.set(http::field::accept_encoding, "deflate, gzip;q=0.8");
  auto zipped = judge_tcp_request(p, gzip);
  ASSERT_TRUE(zipped);
  EXPECT_EQ(hdr(*zipped, http::field::content_encoding), "gzip");
  EXPECT_EQ(zipped->body(), index->gzip_body);
  // Two encodings are two representations: each has its own strong validator.
  std::string zipped_etag = hdr(*zipped, http::field::etag);
  EXPECT_NE(zipped_etag, index->etag);
  Request zipped_cached = gzip;
  zipped_cached.set(http::field::if_none_match, zipped_etag);
  EXPECT_EQ(judge_tcp_request(p, zipped_cached)->result(), http::status::not_modified);
  zipped_cached.set(http::field::if_none_match, std::string(index->etag));
  EXPECT_EQ(judge_tcp_request(p, zipped_cached)->result(), http::status::ok);
  gzip.set(http::field::accept_encoding, "gzip;q=0");
  EXPECT_EQ(hdr(*judge_tcp_request(p, gzip), http::field::content_encoding), "");

  Request cached = request(http::verb::get, "/");
  cached.set(http::field::if_none_match, "\"other\", " + std::string(index->etag));
  auto not_modified = judge_tcp_request(p, cached);
  ASSERT_TRUE(not_modified);
  EXPECT_EQ(not_modified->result(), http::status::not_modified);
  EXPECT_TRUE(not_modified->body().empty());

  // A POST to a file's path, or an unknown path, is not a file.
  auto post = judge_tcp_request(p, request(http::verb::post, "/"));
  ASSERT_TRUE(post);
  EXPECT_EQ(code_of(*post), "unauthenticated");
  EXPECT_EQ(code_of(*judge_tcp_request(p, request(http::verb::get, "/nope.js"))), "unauthenticated");
}

TEST(TcpPolicy, EverythingElseNeedsTheToken) {
  TcpPolicy p = policy();
  auto none = judge_tcp_request(p, request(http::verb::get, "/v1/status"));
  ASSERT_TRUE(none);
  EXPECT_EQ(none->result(), http::status::unauthorized);
  EXPECT_EQ(code_of(*none), "unauthenticated");
  EXPECT_EQ(none->body().find(kToken), std::string::npos);
  EXPECT_EQ(hdr(*none, http::field::cache_control), "no-store");
  Request wrong = request(http::verb::get, "/metrics");
  wrong.set(http::field::authorization, "Bearer " + std::string(64, 'b'));
  EXPECT_EQ(code_of(*judge_tcp_request(p, wrong)), "unauthenticated");
  Request basic = request(http::verb::get, "/metrics");
  basic.set(http::field::authorization, "Basic " + kToken);
  EXPECT_EQ(code_of(*judge_tcp_request(p, basic)), "unauthenticated");
  Request cookie = request(http::verb::get, "/v1/events/stream");
  cookie.set(http::field::cookie, "theme=dark; gpuq_token=" + kToken + "; x=y");
  EXPECT_FALSE(judge_tcp_request(p, cookie));
  Request bad_cookie = request(http::verb::get, "/v1/status");
  bad_cookie.set(http::field::cookie, "gpuq_token=" + kToken + "0");
  EXPECT_EQ(code_of(*judge_tcp_request(p, bad_cookie)), "unauthenticated");
  Request lower = request(http::verb::get, "/v1/status");
  lower.set(http::field::authorization, "bearer " + kToken);
  EXPECT_FALSE(judge_tcp_request(p, lower));
}

TEST(TcpPolicy, ChangesNeedTheOriginAndTheCsrfHeader) {
  TcpPolicy p = policy();
  EXPECT_FALSE(judge_tcp_request(p, page_post("/v1/jobs/7/cancel")));
  EXPECT_FALSE(judge_tcp_request(p, page_post("/v1/drain", "box.lan")));
  Request foreign = page_post("/v1/jobs/7/cancel");
  foreign.set(http::field::origin, "http://evil.example");
  EXPECT_EQ(code_of(*judge_tcp_request(p, foreign)), "forbidden_origin");
  Request other_port = page_post("/v1/jobs/7/cancel");
  other_port.set(http::field::origin, "http://127.0.0.1:9999");
  EXPECT_EQ(code_of(*judge_tcp_request(p, other_port)), "forbidden_origin");
  Request no_origin = page_post("/v1/jobs/7/cancel");
  no_origin.erase(http::field::origin);
  EXPECT_EQ(code_of(*judge_tcp_request(p, no_origin)), "forbidden_origin");
  Request no_csrf = page_post("/v1/jobs/7/cancel");
  no_csrf.erase("X-Gpuq-Csrf");
  auto refused = judge_tcp_request(p, no_csrf);
  EXPECT_EQ(refused->result(), http::status::forbidden);
  EXPECT_EQ(code_of(*refused), "csrf_missing");
  // The token is asked for first: no hint about the rest to a client without it.
  Request anonymous = page_post("/v1/jobs/7/cancel");
  anonymous.erase(http::field::authorization);
  EXPECT_EQ(code_of(*judge_tcp_request(p, anonymous)), "unauthenticated");
  // A read with a foreign Origin is fine (the same-origin policy keeps its answer from the page).
  Request read = with_token(request(http::verb::get, "/v1/status"));
  read.set(http::field::origin, "http://evil.example");
  EXPECT_FALSE(judge_tcp_request(p, read));
}

TEST(TcpPolicy, SubmitsOnlyWhenAllowed) {
  for (const char* target : {"/v1/jobs", "/v1/plans", "/v1//jobs/"}) {
    auto refused = judge_tcp_request(policy(false), page_post(target));
    ASSERT_TRUE(refused) << target;
    EXPECT_EQ(code_of(*refused), "submit_disabled");
    EXPECT_NE(refused->body().find("--http-allow-submit"), std::string::npos);
    EXPECT_FALSE(judge_tcp_request(policy(true), page_post(target))) << target;
  }
  EXPECT_FALSE(judge_tcp_request(policy(false), page_post("/v1/jobs/3/retry")));
}

TEST(TcpPolicy, SessionSetsAndClearsTheCookie) {
  TcpPolicy p = policy();
  auto start = judge_tcp_request(p, page_post("/v1/session"));
  ASSERT_TRUE(start);
  EXPECT_EQ(start->result(), http::status::no_content);
  EXPECT_EQ(hdr(*start, http::field::set_cookie),
            "gpuq_token=" + kToken + "; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000");
  auto end = judge_tcp_request(p, page_post("/v1/session/end"));
  ASSERT_TRUE(end);
  EXPECT_EQ(hdr(*end, http::field::set_cookie), "gpuq_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
  Request no_csrf = page_post("/v1/session");
  no_csrf.erase("X-Gpuq-Csrf");
  EXPECT_EQ(code_of(*judge_tcp_request(p, no_csrf)), "csrf_missing");
}

TEST(TcpPolicy, HeadersOfEveryAnswer) {
  Response r = json_response(http::status::ok, {});
  add_tcp_headers(r, true);
  EXPECT_EQ(hdr(r, "Content-Security-Policy"), "default-src 'self'; frame-ancestors 'none'");
  EXPECT_EQ(hdr(r, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(hdr(r, "Referrer-Policy"), "no-referrer");
  EXPECT_EQ(hdr(r, "X-Frame-Options"), "DENY");
  EXPECT_EQ(hdr(r, http::field::cache_control), "no-store");
  EXPECT_EQ(hdr(r, http::field::access_control_allow_origin), "");
}

}  // namespace
}  // namespace gpuq::api
