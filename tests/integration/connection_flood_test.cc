// SPDX-License-Identifier: Apache-2.0
// Floods of connections against a real daemon (docs/api.md, "Connections"): on TCP, where any
// local process or web page may connect without a token, and on the unix socket from another
// process of the same user. The owner's CLI must always get through on the unix socket, and
// the dashboard must be usable again once the flood closes. Each test drives the daemon to a
// known point (its /metrics counts every connection it displaced or refused) before it checks.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "tcp_http.h"
#include "unix_http.h"

namespace gpuq::testing {
namespace {

std::string socket_of(const Harness& h) { return h.home() + "/gpuq.sock"; }

// Room for a flood's descriptors in this process (and the daemon it starts).
void raise_descriptor_limit() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 1 << 16);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

// How long `fn` takes, in milliseconds; printed so that a run shows the figure.
template <class Fn>
double timed_ms(const char* what, Fn fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %.1f ms\n", what, ms);
  return ms;
}

// The owner's CLI over the unix socket: status and submit both answer.
void expect_cli_answers(const Harness& h, const char* during) {
  timed_ms(fmt::format("gpuq status {}", during).c_str(), [&] {
    auto status = h.gpuq({"status"}, 20'000);
    EXPECT_EQ(status.status, 0) << during << ": " << status.err;
  });
  timed_ms(fmt::format("gpuq submit {}", during).c_str(), [&] {
    auto submit = h.gpuq({"submit", "--hold", "--", "true"}, 20'000);
    EXPECT_EQ(submit.status, 0) << during << ": " << submit.err;
  });
}

// The last daemon.connections_refused event's data; null when there is none.
nlohmann::json last_refusal_event(const Harness& h) {
  nlohmann::json last;
  for (const auto& e : h.events()) {
    if (e["kind"] == "daemon.connections_refused") last = e["data"];
  }
  return last;
}

TEST(ConnectionFlood, IdleTcpConnectionsLockNobodyOut) {
  raise_descriptor_limit();
  Harness h("fake:1");
  TcpDaemon d(h);
  constexpr int kFlood = 1000;
  std::vector<int> flood;
  for (int i = 0; i < kFlood; ++i) {
    int fd = tcp_connect(d.listen());
    ASSERT_GE(fd, 0) << "connection " << i;
    flood.push_back(fd);
  }
  // Every one of them accepted: all but the anonymous class's 32 made room for a later one.
  ASSERT_TRUE(wait_until([&] {
    return connection_metric(h, "gpuq_connections_displaced_total", "tcp_anonymous") >= kFlood - 32;
  })) << connection_metric(h, "gpuq_connections_displaced_total", "tcp_anonymous");
  EXPECT_LE(connection_metric(h, "gpuq_connections_open", "tcp_anonymous"), 32);
  expect_cli_answers(h, "during a flood of 1000 idle TCP connections");
  // The dashboard, with its token, gets in during the flood too: it takes an idle one's place.
  auto api = tcp_request("GET", d.url("/v1/status"), {d.bearer()});
  EXPECT_EQ(api.status, 200) << api.body;
  for (int fd : flood) ::close(fd);
  auto page = tcp_request("GET", d.url("/"));
  EXPECT_EQ(page.status, 200);
  auto again = tcp_request("GET", d.url("/v1/status"), {d.bearer()});
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(connection_metric(h, "gpuq_connections_refused_total", "tcp_anonymous"), 0);
  EXPECT_EQ(connection_metric(h, "gpuq_connections_refused_total", "unix"), 0);
  EXPECT_EQ(connection_metric(h, "gpuq_connections_limit", "tcp_anonymous"), 32);
  // Told once, not once per connection.
  ASSERT_TRUE(wait_until([&] { return !last_refusal_event(h).is_null(); }));
  auto event = last_refusal_event(h);
  EXPECT_GE(event["classes"]["tcp_anonymous"]["displaced"].get<int>(), 1) << event.dump();
  EXPECT_EQ(event["classes"]["tcp_anonymous"]["limit"], 32);
  int told = 0;
  for (const auto& e : h.events()) told += e["kind"] == "daemon.connections_refused" ? 1 : 0;
  EXPECT_EQ(told, 1);
}

TEST(ConnectionFlood, TcpConnectionsThatSendOneByteAreClosed) {
  raise_descriptor_limit();
  Harness h("fake:1");
  TcpDaemon d(h);
  constexpr int kFlood = 200;
  std::vector<int> flood;
  for (int i = 0; i < kFlood; ++i) {
    int fd = tcp_connect(d.listen());
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::send(fd, "G", 1, MSG_NOSIGNAL), 1);
    flood.push_back(fd);
  }
  expect_cli_answers(h, "during 200 TCP connections that sent one byte");
  // Each is closed by the daemon: displaced by a later one, or at the anonymous head deadline
  // (5 s), long before the 30 s idle timeout.
  int closed = 0;
  for (int fd : flood) closed += wait_closed_by_peer(fd, 20'000) ? 1 : 0;
  EXPECT_EQ(closed, kFlood);
  for (int fd : flood) ::close(fd);
  EXPECT_EQ(connection_metric(h, "gpuq_connections_open", "tcp_anonymous"), 0);
  auto api = tcp_request("GET", d.url("/v1/status"), {d.bearer()});
  EXPECT_EQ(api.status, 200);
}

// Found by review: after answering a request whose body it will not read (a 401 judged from the
// head), the daemon drains what the client still sends for up to 2 s; a client that kept
// sending past that and then went quiet held the connection, and its place, for ever (a read
// that completed at once was not cancelled by the deadline).
TEST(ConnectionFlood, AClientThatKeepsSendingAfterARefusalIsClosed) {
  Harness h("fake:1");
  TcpDaemon d(h);
  int fd = tcp_connect(d.listen());
  ASSERT_GE(fd, 0);
  std::string head = "POST /v1/jobs HTTP/1.1\r\nHost: " + d.listen() + "\r\nContent-Length: 8000000\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  // Junk for 3 s, past the 2 s the daemon drains for, as fast as the daemon takes it.
  std::string junk(4096, 'x');
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < until) {
    if (::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) break;
  }
  EXPECT_TRUE(wait_closed_by_peer(fd, 10'000)) << "the connection outlived its linger deadline";
  ::close(fd);
  EXPECT_EQ(connection_metric(h, "gpuq_connections_open", "tcp_anonymous"), 0);
}

// `count` connections that each ask for the dashboard's bundle (~150 KB) 200 times, with
// `headers` (each ended by CRLF), and never read: far more than the socket buffers hold, so
// each session is writing, blocked on a client that does not read. Fewer when a connect fails.
std::vector<int> open_unread_readers(const TcpDaemon& d, int count, const std::string& headers) {
  std::string request = "GET /app.js HTTP/1.1\r\nHost: " + d.listen() + "\r\n" + headers + "\r\n";
  std::string pipelined;
  for (int i = 0; i < 200; ++i) pipelined += request;
  std::vector<int> readers;
  for (int i = 0; i < count; ++i) {
    int fd = tcp_connect(d.listen());
    if (fd < 0) break;
    ::send(fd, pipelined.data(), pipelined.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    readers.push_back(fd);
  }
  return readers;
}

// Found by review: a client without the token that pipelines requests for the dashboard's files
// and reads the answers slowly (or never) was busy, never idle, so 32 of them answered every
// later TCP client 503, the owner's dashboard included.
TEST(ConnectionFlood, SlowReadersWithoutTheTokenCannotKeepTheirPlaces) {
  raise_descriptor_limit();
  Harness h("fake:1");
  TcpDaemon d(h);
  std::vector<int> readers = open_unread_readers(d, 40, "");
  ASSERT_EQ(readers.size(), 40u);
  // A known point: the daemon has written all the buffers hold, so every session still open
  // is blocked in a write (the bytes waiting in the readers stop growing).
  auto waiting_bytes = [&] {
    long total = 0;
    for (int fd : readers) {
      int n = 0;
      if (::ioctl(fd, FIONREAD, &n) == 0) total += n;
    }
    return total;
  };
  long before = -1;
  bool full = false;
  for (int i = 0; i < 120 && !full; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    long now = waiting_bytes();
    full = now > 0 && now == before;
    before = now;
  }
  ASSERT_TRUE(full) << "the readers' buffers never filled";
  EXPECT_GE(connection_metric(h, "gpuq_connections_displaced_total", "tcp_anonymous"), 8);
  auto api = tcp_request("GET", d.url("/v1/status"), {d.bearer()});
  EXPECT_EQ(api.status, 200) << api.body;
  auto page = tcp_request("GET", d.url("/"));
  EXPECT_EQ(page.status, 200);
  for (int fd : readers) ::close(fd);
  EXPECT_EQ(connection_metric(h, "gpuq_connections_refused_total", "tcp_anonymous"), 0);
}

// A client with the token that asks for answers and never reads them: each connection is
// closed when its answer has waited out the write deadline (30 s; 300 ms here), so such
// clients cannot hold the authenticated class's places.
TEST(ConnectionFlood, AnAnswerNotTakenWithinTheWriteDeadlineEndsItsConnection) {
  ScopedEnv write("GPUQ_TEST_WRITE_TIMEOUT_MS", "300");  // test-only: the default is 30 s
  Harness h("fake:1");
  TcpDaemon d(h);
  std::vector<int> readers = open_unread_readers(d, 4, d.bearer() + "\r\n");
  ASSERT_EQ(readers.size(), 4u);
  ASSERT_TRUE(wait_until([&] { return connection_metric(h, "gpuq_connections_open", "tcp_authenticated") >= 1; },
                         10'000));
  // Nothing is read: the daemon's writes block, and the deadline ends each connection.
  EXPECT_TRUE(wait_until([&] { return connection_metric(h, "gpuq_connections_open", "tcp_authenticated") == 0; },
                         20'000))
      << connection_metric(h, "gpuq_connections_open", "tcp_authenticated");
  for (int fd : readers) ::close(fd);
  EXPECT_EQ(tcp_request("GET", d.url("/v1/status"), {d.bearer()}).status, 200);
}

// A child process of the same user opens `count` connections to the unix socket at `path`,
// writes one byte on ready[1] when they are open, and holds them until release[1] closes.
pid_t flood_unix_socket(const std::string& path, int count, const int ready[2], const int release[2]) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::close(ready[0]);
  ::close(release[1]);  // else the child's own copy keeps the pipe open
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  for (int i = 0; i < count; ++i) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(2);
  }
  char byte = 1;
  if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
  if (::read(release[0], &byte, 1) < 0) ::_exit(4);  // returns when the parent closes its end
  ::_exit(0);
}

TEST(ConnectionFlood, IdleUnixConnectionsOfTheSameUserLockNobodyOut) {
  raise_descriptor_limit();
  Harness h("fake:1");
  h.start();
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  constexpr int kFlood = 1000;
  pid_t child = flood_unix_socket(socket_of(h), kFlood, ready, release);
  ::close(ready[1]);
  ::close(release[0]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the flooding process could not connect";
  ASSERT_TRUE(wait_until([&] {
    return connection_metric(h, "gpuq_connections_displaced_total", "unix") >= kFlood - 256;
  }));
  expect_cli_answers(h, "during a flood of 1000 idle unix connections of the same user");
  ::close(release[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ::close(ready[0]);
  EXPECT_EQ(connection_metric(h, "gpuq_connections_refused_total", "unix"), 0);
}

TEST(ConnectionFlood, EventStreamsHaveACapOfTheirOwn) {
  raise_descriptor_limit();
  Harness h("fake:1");
  TcpDaemon d(h);
  constexpr int kStreams = 64;  // limits::kMaxEventStreams
  std::vector<int> streams;
  for (int i = 0; i < kStreams; ++i) {
    int fd = unix_connect(socket_of(h));
    ASSERT_GE(fd, 0);
    std::string request = "GET /v1/events/stream HTTP/1.1\r\nHost: gpuq\r\n\r\n";
    ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    streams.push_back(fd);
  }
  ASSERT_TRUE(wait_until([&] { return connection_metric(h, "gpuq_connections_open", "event_streams") == kStreams; }));
  EXPECT_EQ(connection_metric(h, "gpuq_connections_open", "unix"), 1) << "only the /metrics request's own";
  // One stream more, on TCP: 503 with a JSON error that says what to do.
  auto refused = tcp_request("GET", d.url("/v1/events/stream"), {d.bearer()});
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(code_of(refused), "unavailable");
  EXPECT_NE(refused.body.find("too many event streams open (64"), std::string::npos) << refused.body;
  EXPECT_EQ(connection_metric(h, "gpuq_connections_refused_total", "event_streams"), 1);
  // The rest of the API still answers on both listeners.
  expect_cli_answers(h, "with every event stream taken");
  EXPECT_EQ(tcp_request("GET", d.url("/v1/status"), {d.bearer()}).status, 200);
  ASSERT_TRUE(wait_until([&] { return !last_refusal_event(h).is_null(); }));
  auto event = last_refusal_event(h);
  EXPECT_EQ(event["refused"], 1) << event.dump();
  EXPECT_EQ(event["classes"]["event_streams"],
            (nlohmann::json{{"refused", 1}, {"displaced", 0}, {"open", kStreams}, {"limit", kStreams}}));
  for (int fd : streams) ::close(fd);
  ASSERT_TRUE(wait_until([&] { return connection_metric(h, "gpuq_connections_open", "event_streams") == 0; }));
  auto stream = tcp_request("GET", d.url("/v1/events/stream"), {d.bearer()}, "", true);
  EXPECT_EQ(stream.status, 200);
}

// A connection on which a request's head has arrived and its body has not: busy (it may not be
// displaced) until the body comes or the 30 s idle timeout ends it.
int open_stalled_body(const std::string& socket) {
  int fd = unix_connect(socket);
  if (fd < 0) return fd;
  std::string head = "POST /v1/gc HTTP/1.1\r\nHost: gpuq\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
  if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(head.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the daemon is done with `fd`, without waiting: it answered (a displaced connection
// whose head had arrived is answered 503), closed or reset it.
bool done_with_by_peer_now(int fd) {
  char byte;
  ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

TEST(ConnectionFlood, BusyUnixConnectionsPastAUidsShareGet503) {
  raise_descriptor_limit();
  Harness h("fake:1");
  h.start();
  constexpr int kShare = 256;  // limits::kMaxUnixConnectionsPerUid
  std::vector<int> busy;
  for (int i = 0; i < kShare; ++i) {
    busy.push_back(open_stalled_body(socket_of(h)));
    ASSERT_GE(busy.back(), 0);
  }
  // Once every head has been read, the next connection of the same uid finds none of its own
  // idle: 503, naming the share. Until then a probe may take the place of a connection whose
  // head was not read yet; that one is closed (or answered 503), and opened again.
  HttpAnswer refused;
  bool got_503 = wait_until([&] {
    for (int& fd : busy) {
      if (done_with_by_peer_now(fd)) {
        ::close(fd);
        fd = open_stalled_body(socket_of(h));
      }
    }
    refused = unix_get(socket_of(h), "/v1/health");
    return refused.status == 503;
  });
  ASSERT_TRUE(got_503) << refused.status << " " << refused.body;
  EXPECT_NE(refused.body.find("too many connections from uid 0 (256 open, its share of the unix socket's 512)"),
            std::string::npos) << refused.body;
  for (int fd : busy) ::close(fd);
  ASSERT_TRUE(wait_until([&] { return h.gpuq({"status"}).status == 0; }));
  EXPECT_GE(connection_metric(h, "gpuq_connections_refused_total", "unix"), 1);
}

}  // namespace
}  // namespace gpuq::testing
