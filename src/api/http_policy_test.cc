// SPDX-License-Identifier: Apache-2.0
// The TCP listener's policy on hand-made requests (no socket, no daemon).
#include "api/http_policy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "api/browser_sessions.h"

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

// A cookie is sent to every port of its host, so one that carried the token gave it to any
// other server on 127.0.0.1: the token counts from the header only, a cookie carries a
// browser session's value (BrowserSessionTest below).
TEST(HttpPolicy, TheTokenCountsFromTheHeaderNeverFromACookieOrTheQuery) {
  EXPECT_TRUE(request_shows_token(policy(), with_token(request(http::verb::get, "/v1/status"))));
  Request cookie = request(http::verb::get, "/v1/status");
  cookie.set(http::field::cookie, "other=1; gpuq_token=" + kToken + "; gpuq_session=" + kToken);
  EXPECT_FALSE(request_shows_token(policy(), cookie));
  EXPECT_EQ(code_of(*judge_tcp_request(policy(), cookie)), "unauthenticated");
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

class BrowserSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("gpuq-browser-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    policy_.browser_sessions = std::make_shared<BrowserSessions>((dir_ / "browser-sessions").string(), now_);
    policy_.browser_sessions->set_daemon_token(kToken);
    policy_.cookie_name = "gpuq_session_7878";
    policy_.wall_ms = [this] { return now_; };
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // POST /v1/session as the page sends it, with `extra` headers; the new session's value.
  std::string sign_in(Request start = page_post("/v1/session")) {
    auto answer = judge_tcp_request(policy_, start);
    EXPECT_TRUE(answer);
    if (!answer) return "";
    EXPECT_EQ(answer->result(), http::status::no_content);
    std::vector<std::string> cookies;
    for (auto [f, end] = answer->equal_range(http::field::set_cookie); f != end; ++f) {
      cookies.emplace_back(f->value().data(), f->value().size());
    }
    EXPECT_EQ(cookies.size(), 2u);
    if (cookies.size() != 2) return "";
    std::string prefix = "gpuq_session_7878=";
    EXPECT_TRUE(cookies[0].starts_with(prefix)) << cookies[0];
    std::string value = cookies[0].substr(prefix.size(), 64);
    EXPECT_EQ(cookies[0], prefix + value + "; HttpOnly; SameSite=Strict; Path=/; Max-Age=604800");
    // The cookie that carried the token itself in earlier versions is cleared.
    EXPECT_EQ(cookies[1], "gpuq_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    return value;
  }
  Request with_cookie(Request r, const std::string& value) {
    r.set(http::field::cookie, "theme=dark; gpuq_session_7878=" + value + "; x=y");
    return r;
  }

  std::filesystem::path dir_;
  int64_t now_ = 1'800'000'000'000;
  TcpPolicy policy_ = policy();
};

TEST_F(BrowserSessionTest, ASignInGetsARandomSessionNeverTheToken) {
  std::string value = sign_in();
  ASSERT_EQ(value.size(), 64u);
  EXPECT_NE(value, kToken);
  EXPECT_NE(sign_in(), value);  // each sign-in its own
  Request stream = with_cookie(request(http::verb::get, "/v1/events/stream"), value);
  EXPECT_FALSE(judge_tcp_request(policy_, stream));  // let through
  auto who = tcp_identity(policy_, stream);
  ASSERT_TRUE(who);
  EXPECT_EQ(who->user, "");
  EXPECT_EQ(who->session, value);
  // Another listener's cookie of the same value is not this one's.
  Request other = request(http::verb::get, "/v1/status");
  other.set(http::field::cookie, "gpuq_session_7879=" + value);
  EXPECT_EQ(code_of(*judge_tcp_request(policy_, other)), "unauthenticated");
  std::string altered = value.substr(0, 63) + (value.back() == '0' ? "1" : "0");
  Request wrong = with_cookie(request(http::verb::get, "/v1/status"), altered);
  EXPECT_EQ(code_of(*judge_tcp_request(policy_, wrong)), "unauthenticated");
  Request no_csrf = page_post("/v1/session");
  no_csrf.erase("X-Gpuq-Csrf");
  EXPECT_EQ(code_of(*judge_tcp_request(policy_, no_csrf)), "csrf_missing");
}

TEST_F(BrowserSessionTest, SigningOutEndsTheSessionItself) {
  std::string value = sign_in();
  std::string other = sign_in();
  Request end = page_post("/v1/session/end");
  end.erase(http::field::authorization);
  auto answer = judge_tcp_request(policy_, with_cookie(end, value));
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->result(), http::status::no_content);
  EXPECT_EQ(hdr(*answer, http::field::set_cookie), "gpuq_session_7878=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
  // The value no longer works, even where a browser kept it; the other sign-in goes on.
  EXPECT_EQ(code_of(*judge_tcp_request(policy_, with_cookie(request(http::verb::get, "/v1/status"), value))),
            "unauthenticated");
  EXPECT_FALSE(judge_tcp_request(policy_, with_cookie(request(http::verb::get, "/v1/status"), other)));
  EXPECT_EQ(policy_.browser_sessions->size(), 1u);
}

// Found by review: a cookie alone opened the next session (a stolen one never ended), and a
// box user's session could be traded for their lasting dashboard token.
TEST_F(BrowserSessionTest, ASessionOpensNoOtherSessionAndGetsNoToken) {
  std::string value = sign_in();
  Request renew = page_post("/v1/session");
  renew.erase(http::field::authorization);
  auto refused = judge_tcp_request(policy_, with_cookie(renew, value));
  ASSERT_TRUE(refused);
  EXPECT_EQ(code_of(*refused), "unauthenticated");
  EXPECT_EQ(policy_.browser_sessions->size(), 1u);
  Request token = page_post("/v1/dashboard/session");
  token.erase(http::field::authorization);
  refused = judge_tcp_request(policy_, with_cookie(token, value));
  ASSERT_TRUE(refused);
  EXPECT_EQ(code_of(*refused), "permission_denied");
  EXPECT_FALSE(judge_tcp_request(policy_, page_post("/v1/dashboard/session")));  // with the token: the API decides
}

TEST_F(BrowserSessionTest, ASessionEndsADayAfterItsLastUseAndAWeekAfterItOpened) {
  std::string value = sign_in();
  Request read = with_cookie(request(http::verb::get, "/v1/status"), value);
  const int64_t hour = 3600 * 1000;
  for (int day = 0; day < 7; ++day) {
    now_ += 23 * hour;  // used every 23 h: it lasts
    EXPECT_FALSE(judge_tcp_request(policy_, read)) << day;
  }
  now_ += 7 * hour;  // a week since it opened, used 7 h ago
  auto refused = judge_tcp_request(policy_, read);
  ASSERT_TRUE(refused);
  EXPECT_EQ(code_of(*refused), "unauthenticated");
  std::string idle = sign_in();
  now_ += kBrowserSessionIdleMs;
  EXPECT_EQ(code_of(*judge_tcp_request(policy_, with_cookie(request(http::verb::get, "/v1/status"), idle))),
            "unauthenticated");
}

// Found by review: the cap was shared, so one box user signing in a thousand times signed
// everyone else out.
TEST_F(BrowserSessionTest, OneUserMakesRoomAmongTheirOwnSessions) {
  BrowserSessions& sessions = *policy_.browser_sessions;
  std::string alices = sessions.open({"alice", 1001}, now_).value();
  std::string first_of_bob;
  for (size_t i = 0; i < kMaxBrowserSessionsPerUser + 5; ++i) {
    std::string value = sessions.open({"bob", 1002}, now_ + 1 + static_cast<int64_t>(i)).value();
    if (i == 0) first_of_bob = value;
  }
  EXPECT_EQ(sessions.size(), kMaxBrowserSessionsPerUser + 1);
  EXPECT_TRUE(sessions.use(alices, now_ + 1000));
  EXPECT_FALSE(sessions.use(first_of_bob, now_ + 1000));  // bob's least used made room
}

TEST_F(BrowserSessionTest, ALineThatCannotBeReadIsDropped) {
  std::string value = sign_in();
  std::string path = (dir_ / "browser-sessions").string();
  std::ofstream(path, std::ios::app) << "not json\n"
                                        "{\"value\":\"" << std::string(64, 'c')
                                     << "\",\"user\":\"\",\"uid\":0,\"opened_ms\":1800000000000,\"token_digest\":\"x\"}\n";
  BrowserSessions again(path, now_);
  again.set_daemon_token(kToken);
  EXPECT_EQ(again.size(), 2u);
  EXPECT_TRUE(again.use(value, now_));
  EXPECT_FALSE(again.use(std::string(64, 'c'), now_));  // no digest: another token's
}

TEST_F(BrowserSessionTest, ARestartKeepsTheSessionsInAPrivateFile) {
  std::string value = sign_in();
  std::string path = (dir_ / "browser-sessions").string();
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  policy_.browser_sessions = std::make_shared<BrowserSessions>(path, now_ + 1000);
  policy_.browser_sessions->set_daemon_token(kToken);
  EXPECT_FALSE(judge_tcp_request(policy_, with_cookie(request(http::verb::get, "/v1/status"), value)));
  // A week after it opened, a restart does not bring it back.
  EXPECT_EQ(BrowserSessions(path, now_ + kBrowserSessionMaxAgeMs).size(), 0u);
  // Nor once the daemon's token changed (its file removed, the daemon restarted): the sessions
  // that token opened end with it.
  policy_.browser_sessions->set_daemon_token(std::string(64, 'b'));
  EXPECT_EQ(code_of(*judge_tcp_request(policy_, with_cookie(request(http::verb::get, "/v1/status"), value))),
            "unauthenticated");
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
