// SPDX-License-Identifier: Apache-2.0
// The TCP listener end to end (docs/api.md, "HTTP listener and the dashboard"): a real daemon
// with --http 127.0.0.1:0, requests over a real TCP socket with libcurl, and the CLI over TCP
// (gpuq --url --token; the home's token sent only to the listener it was made for) and
// `gpuq dashboard`.
#include <arpa/inet.h>
#include <curl/curl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "harness.h"
#include "tcp_http.h"
#include "base/ascii.h"
#include "os/process.h"

namespace gpuq::testing {
namespace {

TEST(HttpListener, TheTokenIsNeeded) {
  Harness h("fake:1");
  TcpDaemon d(h);
  ASSERT_EQ(d.token().size(), 64u);
  auto none = tcp_request("GET", d.url("/v1/status"));
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(code_of(none), "unauthenticated");
  auto wrong = tcp_request("GET", d.url("/v1/status"), {"Authorization: Bearer " + std::string(64, '0')});
  EXPECT_EQ(wrong.status, 401);
  auto bearer = tcp_request("GET", d.url("/v1/status"), {d.bearer()});
  EXPECT_EQ(bearer.status, 200) << bearer.body;
  EXPECT_TRUE(nlohmann::json::parse(bearer.body).contains("jobs"));
  auto cookie = tcp_request("GET", d.url("/metrics"), {d.cookie()});
  EXPECT_EQ(cookie.status, 200);
  EXPECT_NE(cookie.body.find("gpuq_"), std::string::npos);
  // A cookie never carries the token: one that holds it (as the versions before browser
  // sessions set it) opens nothing.
  EXPECT_EQ(tcp_request("GET", d.url("/metrics"), {"Cookie: gpuq_token=" + d.token()}).status, 401);
}

TEST(HttpListener, EveryAnswerCarriesTheSecurityHeadersAndNoCors) {
  Harness h("fake:1");
  TcpDaemon d(h);
  for (const auto& answer : {tcp_request("GET", d.url("/v1/health"), {d.bearer(), "Origin: http://evil.example"}),
                             tcp_request("GET", d.url("/v1/health")), tcp_request("GET", d.url("/"))}) {
    EXPECT_EQ(answer.header("content-security-policy"), "default-src 'self'; frame-ancestors 'none'");
    EXPECT_EQ(answer.header("x-content-type-options"), "nosniff");
    EXPECT_EQ(answer.header("referrer-policy"), "no-referrer");
    EXPECT_EQ(answer.header("x-frame-options"), "DENY");
    EXPECT_EQ(answer.header("access-control-allow-origin"), "");
  }
  auto api = tcp_request("GET", d.url("/v1/health"), {d.bearer()});
  EXPECT_EQ(api.header("cache-control"), "no-store");
}

TEST(HttpListener, AForeignHostIsRefused) {
  Harness h("fake:1");
  TcpDaemon d(h);
  auto foreign = tcp_request("GET", d.url("/v1/status"), {d.bearer(), "Host: evil.example:1234"});
  EXPECT_EQ(foreign.status, 403);
  EXPECT_EQ(code_of(foreign), "forbidden_host");
  auto page = tcp_request("GET", d.url("/"), {"Host: evil.example"});
  EXPECT_EQ(page.status, 403);
  auto local = tcp_request("GET", d.url("/v1/status"), {d.bearer(), "Host: localhost:1"});
  EXPECT_EQ(local.status, 200);
}

TEST(HttpListener, ChangesNeedTheOriginAndTheCsrfHeader) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("true", {"--hold"});
  std::string hold = d.url(fmt::format("/v1/jobs/{}/release", id));
  auto foreign = tcp_request("POST", hold, {d.bearer(), "Origin: http://evil.example", "X-Gpuq-Csrf: 1"}, "{}");
  EXPECT_EQ(foreign.status, 403);
  EXPECT_EQ(code_of(foreign), "forbidden_origin");
  auto no_csrf = tcp_request("POST", hold, {d.bearer(), "Origin: http://" + d.listen()}, "{}");
  EXPECT_EQ(no_csrf.status, 403);
  EXPECT_EQ(code_of(no_csrf), "csrf_missing");
  EXPECT_EQ(h.show(id)["state"], "held");
  auto fine = tcp_request("POST", hold, d.page_post(), "{}");
  EXPECT_EQ(fine.status, 200) << fine.body;
  EXPECT_NE(h.show(id)["state"], "held");
  // A read with a foreign Origin is answered (no CORS header lets the page read it).
  auto read = tcp_request("GET", d.url("/v1/status"), {d.bearer(), "Origin: http://evil.example"});
  EXPECT_EQ(read.status, 200);
}

TEST(HttpListener, SubmitsOnlyWithHttpAllowSubmit) {
  std::string body = R"({"argv":["true"],"cwd":"/","env":{}})";
  {
    Harness h("fake:1");
    TcpDaemon d(h);
    auto refused = tcp_request("POST", d.url("/v1/jobs"), d.page_post(), body);
    EXPECT_EQ(refused.status, 403);
    EXPECT_EQ(code_of(refused), "submit_disabled");
    EXPECT_EQ(h.health()["http"]["allow_submit"], false);
    auto cli = h.gpuq({"--url", "http://" + d.listen(), "--token", d.token(), "submit", "--", "true"});
    EXPECT_EQ(cli.status, 1);
    EXPECT_NE(cli.err.find("--http-allow-submit"), std::string::npos) << cli.err;
  }
  Harness h("fake:1");
  TcpDaemon d(h, {"--http-allow-submit"});
  EXPECT_EQ(h.health()["http"]["allow_submit"], true);
  auto accepted = tcp_request("POST", d.url("/v1/jobs"), d.page_post(), body);
  EXPECT_EQ(accepted.status, 201) << accepted.body;
}

TEST(HttpListener, TheDashboardIsServedWithoutAToken) {
  Harness h("fake:1");
  TcpDaemon d(h);
  auto page = tcp_request("GET", d.url("/"));
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<!doctype html>"), std::string::npos);
  EXPECT_EQ(page.header("cache-control"), "no-cache");
  std::string etag = page.header("etag");
  ASSERT_FALSE(etag.empty());
  auto again = tcp_request("GET", d.url("/index.html"), {"If-None-Match: " + etag});
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  auto zipped = tcp_request("GET", d.url("/"), {"Accept-Encoding: gzip"});
  EXPECT_EQ(zipped.header("content-encoding"), "gzip");
  EXPECT_EQ(zipped.header("vary"), "Accept-Encoding");
  auto head = tcp_request("HEAD", d.url("/"));
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.header("content-length"), std::to_string(page.body.size()));
  EXPECT_EQ(tcp_request("GET", d.url("/nope.js")).status, 401);
}

TEST(HttpListener, SessionCookieThenTheEventStream) {
  Harness h("fake:1");
  TcpDaemon d(h);
  auto session = tcp_request("POST", d.url("/v1/session"), d.page_post(), "");
  EXPECT_EQ(session.status, 204);
  std::string cookies = session.header("set-cookie");
  std::string prefix = "gpuq_session_" + d.port() + "=";
  ASSERT_TRUE(cookies.starts_with(prefix)) << cookies;
  std::string value = cookies.substr(prefix.size(), 64);
  EXPECT_EQ(cookies, prefix + value + "; HttpOnly; SameSite=Strict; Path=/; Max-Age=604800\n"
                     "gpuq_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
  EXPECT_EQ(cookies.find(d.token()), std::string::npos);
  std::string cookie = "Cookie: " + prefix + value;
  auto stream = tcp_request("GET", d.url("/v1/events/stream"), {cookie}, "", true);
  EXPECT_EQ(stream.status, 200);
  EXPECT_EQ(stream.header("content-type"), "text/event-stream");
  EXPECT_NE(stream.body.find("event: daemon.started"), std::string::npos) << stream.body;
  // Sign-out ends this session (not the one TcpDaemon opened), and its value opens nothing.
  auto end = tcp_request("POST", d.url("/v1/session/end"),
                         {cookie, "Origin: http://" + d.listen(), "X-Gpuq-Csrf: 1", "Content-Type: application/json"}, "");
  EXPECT_EQ(end.status, 204);
  EXPECT_EQ(end.header("set-cookie"), "gpuq_session_" + d.port() + "=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
  EXPECT_EQ(tcp_request("GET", d.url("/v1/status"), {cookie}).status, 401);
  EXPECT_EQ(tcp_request("GET", d.url("/v1/status"), {d.cookie()}).status, 200);
  // Kept in the home, private, so that a restart keeps the pages signed in.
  struct stat st {};
  ASSERT_EQ(::stat((h.home() + "/browser-sessions").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// Found by review: the caller was looked up again after the body, and a session that had
// ended meanwhile fell back to the daemon's own user, an admin (on a box, root's rights).
TEST(HttpListener, ARequestWhoseSessionEndedBeforeItsBodyIsRefused) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int fd = tcp_connect(d.listen());
  ASSERT_GE(fd, 0);
  std::string head = "POST /v1/drain HTTP/1.1\r\nHost: " + d.listen() + "\r\n" + d.cookie() +
                     "\r\nOrigin: http://" + d.listen() +
                     "\r\nX-Gpuq-Csrf: 1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  // A known point: the head was judged (the connection showed the session and moved class).
  ASSERT_TRUE(wait_until([&] { return connection_metric(h, "gpuq_connections_open", "tcp_authenticated") == 1; },
                         10'000));
  auto end = tcp_request("POST", d.url("/v1/session/end"),
                         {d.cookie(), "Origin: http://" + d.listen(), "X-Gpuq-Csrf: 1", "Content-Type: application/json"}, "");
  ASSERT_EQ(end.status, 204);
  ASSERT_EQ(::send(fd, "{}", 2, MSG_NOSIGNAL), 2);
  std::string answer;
  char buf[4096];
  while (answer.find("\r\n\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 401")) << answer;
  auto status = h.gpuq_json({"status", "--json"});
  EXPECT_EQ(status.value("draining", true), false) << status.dump();
}

// Everything `fd` receives until the daemon closes it or `timeout_ms` passes without a byte;
// `closed` says which.
std::string read_until_closed(int fd, int timeout_ms, bool& closed) {
  std::string text;
  char buf[4096];
  closed = false;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return text;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      closed = true;
      return text;
    }
    text.append(buf, static_cast<size_t>(n));
  }
}

// An open event stream lasts as long as the session it showed: after a sign-out, the next
// event ends it instead of reaching the page.
TEST(HttpListener, AnEventStreamEndsWithItsSession) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int fd = tcp_connect(d.listen());
  ASSERT_GE(fd, 0);
  std::string head = "GET /v1/events/stream HTTP/1.1\r\nHost: " + d.listen() + "\r\n" + d.cookie() + "\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  bool closed = false;
  std::string first = read_until_closed(fd, 500, closed);  // the backlog, then quiet
  ASSERT_FALSE(closed) << first;
  ASSERT_NE(first.find("event: daemon.started"), std::string::npos) << first;
  auto end = tcp_request("POST", d.url("/v1/session/end"),
                         {d.cookie(), "Origin: http://" + d.listen(), "X-Gpuq-Csrf: 1", "Content-Type: application/json"}, "");
  ASSERT_EQ(end.status, 204);
  ASSERT_EQ(h.gpuq({"drain"}).status, 0);  // an event: the stream wakes and looks again
  std::string after = read_until_closed(fd, 10'000, closed);
  ::close(fd);
  EXPECT_TRUE(closed) << "the stream outlived its session";
  EXPECT_EQ(after.find("queue.drained"), std::string::npos) << after;
}

TEST(HttpListener, TheTokenFileIsPrivateAndKeptAcrossRestarts) {
  Harness h("fake:1");
  std::string token;
  {
    TcpDaemon d(h);
    token = d.token();
  }
  struct stat st {};
  ASSERT_EQ(::stat((h.home() + "/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat((h.home() + "/token.listen").c_str(), &st), 0);
  h.stop();
  // A stopped daemon's port may be anyone's next: the record of it goes with the daemon, so the
  // CLI sends the token to no one there.
  EXPECT_NE(::stat((h.home() + "/token.listen").c_str(), &st), 0);
  TcpDaemon again(h);
  EXPECT_EQ(again.token(), token);
  h.stop();
  // Never in what the daemon says or logs.
  auto started = h.gpuq({"daemon", "--gpus", "fake:1", "--detach", "--http", "127.0.0.1:0"});
  ASSERT_EQ(started.status, 0) << started.err;
  EXPECT_EQ(started.out.find(token), std::string::npos) << started.out;
  EXPECT_EQ(started.err.find(token), std::string::npos);
  EXPECT_EQ(read_text(h.home() + "/daemon.log").find(token), std::string::npos);
  h.stop();
  ::chmod((h.home() + "/token").c_str(), 0644);
  auto refused = h.gpuq({"daemon", "--gpus", "fake:1", "--detach", "--http", "127.0.0.1:0"});
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.err.find(h.home() + "/token"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("chmod 600"), std::string::npos) << refused.err;
}

TEST(HttpListener, HealthSaysNullWhenOff) {
  Harness h("fake:1");
  h.start();
  EXPECT_TRUE(h.health()["http"].is_null());
  auto dashboard = h.gpuq({"dashboard", "--no-open"});
  EXPECT_EQ(dashboard.status, 1);
  EXPECT_NE(dashboard.err.find("--http"), std::string::npos) << dashboard.err;
}

TEST(HttpListener, ConfigTableNamesTheAddress) {
  Harness h("fake:1");
  std::ofstream(h.home() + "/config.toml") << "[http]\nlisten = \"127.0.0.1:0\"\nallowed_hosts = [\"box.lan\"]\n";
  h.start({});
  std::string listen = h.health()["http"]["listen"].get<std::string>();
  EXPECT_TRUE(listen.starts_with("127.0.0.1:")) << listen;
  EXPECT_NE(listen, "127.0.0.1:0");
  std::string token = read_text(h.home() + "/token");
  auto named = tcp_request("GET", "http://" + listen + "/v1/health", {"Authorization: Bearer " + token, "Host: box.lan"});
  EXPECT_EQ(named.status, 200);
}

// A bound port, held while the test runs; 0 when binding failed.
class HeldPort {
 public:
  explicit HeldPort(uint16_t port = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && ::listen(fd_, 1) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~HeldPort() { ::close(fd_); }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

TEST(HttpListener, AnAskedAddressInUseFailsTheStart) {
  Harness h("fake:1");
  HeldPort held;
  ASSERT_NE(held.port(), 0);
  std::string address = fmt::format("127.0.0.1:{}", held.port());
  auto r = h.gpuq({"daemon", "--gpus", "fake:1", "--detach", "--http", address});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("cannot listen on " + address), std::string::npos) << r.err;
  EXPECT_EQ(h.daemon_pid(), 0);
  auto bad = h.gpuq({"daemon", "--gpus", "fake:1", "--http", "box.lan:80"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("ADDR:PORT"), std::string::npos) << bad.err;
}

TEST(HttpListener, AnAddressOtherMachinesReachIsWarnedAbout) {
  Harness h("fake:1");
  auto open = h.gpuq({"daemon", "--gpus", "fake:1", "--detach", "--http", "0.0.0.0:0"});
  ASSERT_EQ(open.status, 0) << open.err;
  EXPECT_NE(open.out.find("warning: the HTTP listener on 0.0.0.0:0 can be reached from other machines"),
            std::string::npos) << open.out;
  h.stop();
  Harness local("fake:1");
  auto quiet = local.gpuq({"daemon", "--gpus", "fake:1", "--detach", "--http", "127.0.0.1:0"});
  ASSERT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_EQ(quiet.out.find("warning"), std::string::npos) << quiet.out;
  local.stop();
}

TEST(HttpListener, ABusyDefaultPortIsAnEventNotAFailure) {
  Harness h("fake:1");
  HeldPort held(7878);  // may fail when something else holds it: then it is busy all the same
  h.start({});
  EXPECT_TRUE(h.health()["http"].is_null());
  bool reported = false;
  for (const auto& e : h.events()) {
    if (e["kind"] != "daemon.http_failed") continue;
    reported = true;
    EXPECT_EQ(e["data"]["listen"], "127.0.0.1:7878");
    EXPECT_NE(e["data"]["fix"].get<std::string>().find("--http"), std::string::npos);
  }
  EXPECT_TRUE(reported);
}

TEST(HttpListener, TheCliOverTcp) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int64_t id = h.submit_sh("true", {"--hold"});
  std::string url = "http://" + d.listen();
  auto status = h.gpuq({"--url", url, "--token", d.token(), "status", "--json"});
  ASSERT_EQ(status.status, 0) << status.err;
  EXPECT_EQ(nlohmann::json::parse(status.out)["jobs"].size(), 1u);
  // Without --token: the home's token file.
  auto release = h.gpuq({"--url", url, "release", std::to_string(id)});
  EXPECT_EQ(release.status, 0) << release.err;
  EXPECT_NE(h.show(id)["state"], "held");
  auto wrong = h.gpuq({"--url", url, "--token", std::string(64, '0'), "status"});
  EXPECT_EQ(wrong.status, 1);
  EXPECT_NE(wrong.err.find("token"), std::string::npos) << wrong.err;
  auto dashboard = h.gpuq({"dashboard", "--no-open"});
  ASSERT_EQ(dashboard.status, 0) << dashboard.err;
  EXPECT_EQ(dashboard.out, url + "/#token=" + d.token() + "\n");
  auto json = h.gpuq_json({"dashboard", "--no-open", "--json"});
  EXPECT_EQ(json["listen"], d.listen());
  EXPECT_EQ(json["url"], url + "/#token=" + d.token());
}

// A server on 127.0.0.1 that is not the daemon: it keeps the request heads it is sent and
// answers each with the daemon's 401, so a test sees what `gpuq --url` hands to another server.
class RecordingServer {
 public:
  RecordingServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 4) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~RecordingServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }
  std::string received() const {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      std::string head;
      char buffer[4096];
      pollfd c{conn, POLLIN, 0};
      while (head.find("\r\n\r\n") == std::string::npos && ::poll(&c, 1, 5'000) > 0) {
        ssize_t n = ::read(conn, buffer, sizeof buffer);
        if (n <= 0) break;
        head.append(buffer, static_cast<size_t>(n));
      }
      {
        std::lock_guard lock(mutex_);
        received_ += head;
      }
      std::string body = R"({"error":{"code":"unauthenticated","message":"this needs the daemon's token"}})";
      std::string answer = fmt::format(
          "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
          "Connection: close\r\n\r\n{}",
          body.size(), body);
      [[maybe_unused]] ssize_t sent = ::write(conn, answer.data(), answer.size());
      ::close(conn);
    }
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_ = false;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::string received_;
};

// The daemon records where its listener is bound beside the token, and the CLI sends the home's
// token there only: `gpuq --url` to another server hands it nothing, and says why.
TEST(HttpListener, TheHomesTokenGoesOnlyToItsListener) {
  Harness h("fake:1");
  TcpDaemon d(h);
  for (const char* name : {"/token", "/token.listen"}) {
    struct stat st {};
    EXPECT_EQ(::stat((h.home() + name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << name;
  }
  std::ifstream record(h.home() + "/token.listen");
  std::string recorded((std::istreambuf_iterator<char>(record)), std::istreambuf_iterator<char>());
  EXPECT_EQ(recorded, d.listen() + "\n");  // the bound port, not the 0 asked for
  EXPECT_NE(d.port(), "0");

  auto own = h.gpuq({"--url", "http://127.0.0.1:" + d.port(), "status"});
  EXPECT_EQ(own.status, 0) << own.err;

  RecordingServer other;
  ASSERT_NE(other.port(), 0);
  std::string authority = fmt::format("localhost:{}", other.port());
  auto elsewhere = h.gpuq({"--url", "http://" + authority, "status"});
  EXPECT_EQ(elsewhere.status, 1) << elsewhere.err;
  std::string received = other.received();
  EXPECT_NE(received.find("GET /v1/status"), std::string::npos) << received;
  EXPECT_EQ(ascii_lower(received).find("authorization"), std::string::npos) << received;
  EXPECT_EQ(received.find(d.token()), std::string::npos);
  EXPECT_NE(elsewhere.err.find("the home's token (" + h.home() + "/token) was made for the daemon at " +
                               d.listen() + " and is not sent to " + authority),
            std::string::npos)
      << elsewhere.err;
}

}  // namespace
}  // namespace gpuq::testing
