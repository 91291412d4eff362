// SPDX-License-Identifier: Apache-2.0
// The known attacks on a local web service, each tried on a real daemon's TCP listener
// (--http 127.0.0.1:0) and named after the attack; docs/dashboard.md, "Attacks and what stops
// them", says which defence stops each. Requests that no client library would send go as raw
// bytes (raw_exchange); each test checks what the daemon answered and that nothing changed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness.h"
#include "tcp_http.h"

namespace gpuq::testing {
namespace {

// A request head for raw_exchange: `first_line`, then `fields` (each "Name: value"), each
// ended by CRLF, then the blank line and `body`.
std::string raw(const std::string& first_line, const std::vector<std::string>& fields,
                const std::string& body = "") {
  std::string text = first_line + "\r\n";
  for (const auto& f : fields) text += f + "\r\n";
  return text + "\r\n" + body;
}

// Whether any event's JSON holds `text`.
bool events_hold(const Harness& h, const std::string& text) {
  for (const auto& e : h.events()) {
    if (e.dump().find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(TcpAttack, AbsoluteFormRequestTarget) {
  Harness h("fake:1");
  TcpDaemon d(h);
  for (const std::string& target : std::vector<std::string>{"http://evil.example/v1/status", "http://" + d.listen() + "/v1/status",
                             std::string("https://evil.example/")}) {
    auto answer = raw_exchange(d.listen(), raw("GET " + target + " HTTP/1.1",
                                               {"Host: " + d.listen(), d.bearer(), "Connection: close"}));
    EXPECT_EQ(answer.status(), 400) << target << "\n" << answer.text;
    EXPECT_EQ(code_of(answer.body()), "bad_target") << target;
  }
}

TEST(TcpAttack, TwoHostHeaders) {
  Harness h("fake:1");
  TcpDaemon d(h);
  for (auto [first, second] : {std::pair{d.listen(), std::string("evil.example")},
                               std::pair{std::string("evil.example"), d.listen()},
                               std::pair{d.listen(), d.listen()}}) {
    auto answer = raw_exchange(d.listen(), raw("GET /v1/status HTTP/1.1",
                                               {"Host: " + first, "Host: " + second, d.bearer(),
                                                "Connection: close"}));
    EXPECT_EQ(answer.status(), 400) << first << " then " << second << "\n" << answer.text;
    EXPECT_EQ(code_of(answer.body()), "bad_host");
  }
}

TEST(TcpAttack, HostHeaderForms) {
  Harness h("fake:1");
  TcpDaemon d(h);
  const std::string port = d.port();
  // Host names compare without case; the port is not compared (an ssh tunnel may forward
  // another local port), but a change must still come from an Origin equal to the Host.
  for (const std::string& allowed : std::vector<std::string>{"LOCALHOST:" + port, "LocalHost:" + port, "127.0.0.1:" + port,
                              "127.0.0.1:1", "[::1]:" + port, "localhost"}) {
    auto answer = tcp_request("GET", d.url("/v1/health"), {d.bearer(), "Host: " + allowed});
    EXPECT_EQ(answer.status, 200) << allowed << ": " << answer.body;
  }
  // Anything else that might name this machine is a foreign name: a trailing dot, other
  // spellings of loopback, IPv6 without brackets, user info, an empty value.
  for (const std::string& foreign : std::vector<std::string>{"localhost.:" + port, "127.0.0.1.:" + port, "[0:0:0:0:0:0:0:1]:" + port,
        "[::ffff:127.0.0.1]:" + port, "::1", "127.1:" + port, "2130706433:" + port,
        "evil.example@127.0.0.1:" + port, "127.0.0.1:" + port + "@evil.example",
        "localhost.evil.example:" + port}) {
    auto answer = tcp_request("GET", d.url("/v1/health"), {d.bearer(), "Host: " + foreign});
    EXPECT_EQ(answer.status, 403) << foreign << ": " << answer.body;
    EXPECT_EQ(code_of(answer), "forbidden_host") << foreign;
  }
  auto empty = raw_exchange(d.listen(), raw("GET /v1/health HTTP/1.1", {"Host:", d.bearer(), "Connection: close"}));
  EXPECT_EQ(empty.status(), 403) << empty.text;
}

TEST(TcpAttack, MissingHostOnHttp10) {
  Harness h("fake:1");
  TcpDaemon d(h);
  auto answer = raw_exchange(d.listen(), raw("GET /v1/status HTTP/1.0", {d.bearer()}));
  EXPECT_EQ(answer.status(), 400) << answer.text;
  EXPECT_EQ(code_of(answer.body()), "bad_host");
  auto page = raw_exchange(d.listen(), raw("GET / HTTP/1.0", {}));
  EXPECT_EQ(page.status(), 400) << "not even the dashboard's page without a Host";
}

TEST(TcpAttack, DnsRebinding) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("true", {"--hold"});
  // A page of rebind.attacker.example, whose name now resolves to 127.0.0.1: its requests
  // carry its own name as the Host, and its own origin (with the cookie, were it sent).
  std::string host = "rebind.attacker.example:" + d.port();
  auto read = tcp_request("GET", d.url("/v1/status"), {"Host: " + host, d.cookie()});
  EXPECT_EQ(read.status, 403);
  EXPECT_EQ(code_of(read), "forbidden_host");
  auto page = tcp_request("GET", d.url("/"), {"Host: " + host});
  EXPECT_EQ(page.status, 403) << "not even the dashboard's files";
  auto cancel = tcp_request("POST", d.url(fmt::format("/v1/jobs/{}/cancel", id)),
                            {"Host: " + host, d.cookie(), "Origin: http://" + host, "X-Gpuq-Csrf: 1"}, "{}");
  EXPECT_EQ(cancel.status, 403);
  EXPECT_EQ(h.show(id)["state"], "held");
}

TEST(TcpAttack, OriginNull) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("true", {"--hold"});
  // A sandboxed frame or a data: URL sends Origin: null.
  auto cancel = tcp_request("POST", d.url(fmt::format("/v1/jobs/{}/cancel", id)),
                            {d.cookie(), "Origin: null", "X-Gpuq-Csrf: 1", "Content-Type: application/json"}, "{}");
  EXPECT_EQ(cancel.status, 403);
  EXPECT_EQ(code_of(cancel), "forbidden_origin");
  auto no_origin = tcp_request("POST", d.url(fmt::format("/v1/jobs/{}/cancel", id)),
                               {d.cookie(), "X-Gpuq-Csrf: 1", "Content-Type: application/json"}, "{}");
  EXPECT_EQ(no_origin.status, 403);
  EXPECT_EQ(h.show(id)["state"], "held");
}

TEST(TcpAttack, SimpleFormPostWithoutTheCsrfHeader) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("true", {"--hold"});
  std::string cancel = d.url(fmt::format("/v1/jobs/{}/cancel", id));
  // A form needs no preflight: it may carry the cookie and, from a page on this origin, the
  // right Origin; it can never carry X-Gpuq-Csrf.
  for (const std::string& type : std::vector<std::string>{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"}) {
    for (const std::string& origin : std::vector<std::string>{"http://" + d.listen(), std::string("http://evil.example")}) {
      auto answer = tcp_request("POST", cancel, {d.cookie(), "Origin: " + origin, "Content-Type: " + type}, "a=1");
      EXPECT_EQ(answer.status, 403) << type << " from " << origin;
      EXPECT_TRUE(code_of(answer) == "csrf_missing" || code_of(answer) == "forbidden_origin") << answer.body;
    }
  }
  EXPECT_EQ(h.show(id)["state"], "held");
}

TEST(TcpAttack, SmugglingContentLengthWithTransferEncoding) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("true", {"--hold"});
  std::string smuggled = raw(fmt::format("POST /v1/jobs/{}/cancel HTTP/1.1", id),
                             {"Host: " + d.listen(), d.bearer(), "Origin: http://" + d.listen(), "X-Gpuq-Csrf: 1"});
  for (auto fields : {std::vector<std::string>{"Content-Length: 4", "Transfer-Encoding: chunked"},
                      std::vector<std::string>{"Transfer-Encoding: chunked", "Content-Length: 4"}}) {
    fields.insert(fields.begin(), {"Host: " + d.listen(), d.bearer()});
    auto answer = raw_exchange(d.listen(), raw("POST /v1/gc HTTP/1.1", fields, "0\r\n\r\n" + smuggled));
    EXPECT_EQ(answer.statuses, std::vector<int>{400}) << answer.text;
    EXPECT_TRUE(answer.closed);
  }
  EXPECT_EQ(h.show(id)["state"], "held") << "the request inside the body never ran";
}

TEST(TcpAttack, SmugglingTwoContentLengths) {
  Harness h("fake:1");
  TcpDaemon d(h);
  for (auto lengths : {std::vector<std::string>{"Content-Length: 2", "Content-Length: 30"},
                       std::vector<std::string>{"Content-Length: 2, 30"}}) {
    std::vector<std::string> fields = {"Host: " + d.listen(), d.bearer()};
    fields.insert(fields.end(), lengths.begin(), lengths.end());
    auto answer = raw_exchange(d.listen(), raw("POST /v1/gc HTTP/1.1", fields,
                                               "{}GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_EQ(answer.statuses, std::vector<int>{400}) << answer.text;
    EXPECT_TRUE(answer.closed);
  }
}

TEST(TcpAttack, SmugglingBadChunkSizes) {
  Harness h("fake:1");
  TcpDaemon d(h);
  std::vector<std::string> fields = {"Host: " + d.listen(), d.bearer(), "Origin: http://" + d.listen(),
                                     "X-Gpuq-Csrf: 1", "Transfer-Encoding: chunked"};
  for (const std::string& body : std::vector<std::string>{"zz\r\n{}\r\n0\r\n\r\n", "-2\r\n{}\r\n0\r\n\r\n", "2;\r\n{}\r\n0\r\n\r\n",
                           "ffffffffffffffffff\r\n{}\r\n0\r\n\r\n", "2 \r\n{}\r\n0\r\n\r\n"}) {
    auto answer = raw_exchange(d.listen(), raw("POST /v1/gc HTTP/1.1", fields, body));
    EXPECT_EQ(answer.statuses, std::vector<int>{400}) << body << "\n" << answer.text;
    EXPECT_TRUE(answer.closed);
  }
}

TEST(TcpAttack, SmugglingATransferEncodingOtherThanChunked) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("true", {"--hold"});
  std::string smuggled = raw(fmt::format("POST /v1/jobs/{}/cancel HTTP/1.1", id),
                             {"Host: " + d.listen(), d.bearer(), "Origin: http://" + d.listen(),
                              "X-Gpuq-Csrf: 1", "Content-Length: 2"}, "{}");
  // A reader that takes the last coding, or gzip, or HTTP/1.0's rules, would see a body here;
  // one that does not would see the next request: both are refused.
  for (auto [line, coding] : {std::pair{"POST /v1/gc HTTP/1.1", "chunked, gzip"},
                              std::pair{"POST /v1/gc HTTP/1.1", "gzip"},
                              std::pair{"POST /v1/gc HTTP/1.1", "identity"},
                              std::pair{"POST /v1/gc HTTP/1.0", "chunked"}}) {
    auto answer = raw_exchange(d.listen(), raw(line, {"Host: " + d.listen(), d.bearer(),
                                                      std::string("Transfer-Encoding: ") + coding},
                                               "0\r\n\r\n" + smuggled));
    EXPECT_EQ(answer.statuses, std::vector<int>{400}) << coding << "\n" << answer.text;
    EXPECT_TRUE(answer.closed);
  }
  EXPECT_EQ(h.show(id)["state"], "held");
}

TEST(TcpAttack, OptionsTraceAndConnect) {
  Harness h("fake:1");
  TcpDaemon d(h);
  // OPTIONS: a preflight gets no CORS answer, so no other origin may send what needs one.
  auto preflight = tcp_request("OPTIONS", d.url("/v1/jobs"),
                               {"Origin: http://evil.example", "Access-Control-Request-Method: POST",
                                "Access-Control-Request-Headers: x-gpuq-csrf"});
  EXPECT_EQ(preflight.status, 405);
  EXPECT_EQ(code_of(preflight), "method_not_allowed");
  EXPECT_EQ(preflight.header("allow"), "GET, HEAD, POST");
  EXPECT_EQ(preflight.header("access-control-allow-origin"), "");
  EXPECT_EQ(preflight.header("access-control-allow-headers"), "");
  // TRACE would echo the request, cookie included, to whoever can read the answer.
  auto trace = tcp_request("TRACE", d.url("/"), {d.cookie()});
  EXPECT_EQ(trace.status, 405);
  EXPECT_EQ(trace.body.find(d.token()), std::string::npos);
  // CONNECT asks for a tunnel: its target is no path.
  auto connect = raw_exchange(d.listen(), raw("CONNECT evil.example:443 HTTP/1.1",
                                              {"Host: evil.example:443", d.bearer(), "Connection: close"}));
  EXPECT_GE(connect.status(), 400) << connect.text;
  EXPECT_LT(connect.status(), 500);
  auto connect_here = raw_exchange(d.listen(), raw("CONNECT " + d.listen() + " HTTP/1.1",
                                                   {"Host: " + d.listen(), d.bearer(), "Connection: close"}));
  EXPECT_EQ(connect_here.status(), 400) << connect_here.text;
  EXPECT_EQ(code_of(connect_here.body()), "bad_target");
  // With the token, the other methods are refused too.
  for (const std::string& method : std::vector<std::string>{"PUT", "DELETE", "PATCH", "PROPFIND"}) {
    auto answer = tcp_request(method, d.url("/v1/status"), {d.bearer()});
    EXPECT_EQ(answer.status, 405) << method;
  }
}

TEST(TcpAttack, EncodedPathTraversal) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("echo secret-line-of-the-log");
  ASSERT_TRUE(h.wait_for(id, [](const nlohmann::json& j) { return j["state"] == "succeeded"; }));
  const std::vector<std::string> targets = {
      "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2f..%2fetc%2fpasswd", "/assets/..%2f..%2fetc/passwd",
      "/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd", "/index.html%00.js", "/..%5c..%5cetc%5cpasswd",
      "/v1/jobs/..%2f..%2f..%2fetc%2fpasswd/log", "/v1/jobs/%2e%2e/log", "/v1/jobs/%2e%2e%2f1/log",
      fmt::format("/v1/jobs/{}%00/log", id), fmt::format("/v1/jobs/{}%2f..%2f..%2fdaemon.log/log", id),
      "/v1/jobs/..%252f..%252fetc%252fpasswd/log", "/%c0%ae%c0%ae/etc/passwd"};
  for (const std::string& target : targets) {
    for (const std::vector<std::string>& headers :
         {std::vector<std::string>{}, std::vector<std::string>{d.bearer()}}) {
      auto answer = raw_exchange(d.listen(), raw("GET " + target + " HTTP/1.1",
                                                 [&] {
                                                   auto f = headers;
                                                   f.push_back("Host: " + d.listen());
                                                   f.push_back("Connection: close");
                                                   return f;
                                                 }()));
      EXPECT_TRUE(answer.status() == 400 || answer.status() == 401 || answer.status() == 404)
          << target << " answered " << answer.status();
      EXPECT_EQ(answer.text.find("root:"), std::string::npos) << target;
      EXPECT_EQ(answer.text.find("daemon.started"), std::string::npos) << target;
      EXPECT_EQ(answer.text.find("secret-line-of-the-log"), std::string::npos) << target;
    }
  }
  // Unencoded dots, as a client that does not normalise would send them.
  auto plain = raw_exchange(d.listen(), raw("GET /../../../../etc/passwd HTTP/1.1",
                                            {"Host: " + d.listen(), d.bearer(), "Connection: close"}));
  EXPECT_EQ(plain.text.find("root:"), std::string::npos);
  EXPECT_EQ(plain.status(), 404);
  // The log itself, by its job's id, is served.
  auto log = tcp_request("GET", d.url(fmt::format("/v1/jobs/{}/log", id)), {d.bearer()});
  EXPECT_EQ(log.status, 200);
  EXPECT_NE(log.body.find("secret-line-of-the-log"), std::string::npos);
}

TEST(TcpAttack, TokenInAQueryString) {
  Harness h("fake:1");
  TcpDaemon d(h);
  for (const std::string& target : std::vector<std::string>{"/v1/status?token=" + d.token(), "/v1/status?gpuq_token=" + d.token(),
                             "/v1/status?access_token=" + d.token(), "/metrics?token=" + d.token(),
                             "/v1/events/stream?token=" + d.token(),
                             "/v1/status?Authorization=Bearer%20" + d.token()}) {
    auto answer = tcp_request("GET", d.url(target));
    EXPECT_EQ(answer.status, 401) << target;
    EXPECT_EQ(code_of(answer), "unauthenticated") << target;
    EXPECT_EQ(answer.body.find(d.token()), std::string::npos) << "never echoed";
  }
  // Nor logged: not in the daemon's log, nor in any event.
  EXPECT_EQ(read_text(h.home() + "/daemon.log").find(d.token()), std::string::npos);
  EXPECT_FALSE(events_hold(h, d.token()));
}

}  // namespace
}  // namespace gpuq::testing
