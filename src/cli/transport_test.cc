// SPDX-License-Identifier: Apache-2.0
// The real transports against a real unix socket: a tiny scripted server in a thread stands in
// for the daemon, so what goes over the wire (request line, headers, POST body), timeouts,
// kept connections and the classification of failures are checked for real. Each case runs
// against SocketTransport (what the CLI uses) and CurlTransport over the socket (libcurl, loaded
// at first use), which must agree.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>
#include <vector>

#include "cli/curl_transport.h"
#include "cli/socket_transport.h"

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;

// What the server does for one request: answer `reply` verbatim after `delay`, then close the
// connection when `close_after` (as a daemon does at its idle timeout), else read the next
// request from the same connection.
struct Step {
  std::string reply;
  Millis delay{0};
  bool close_after = false;
};

// Serves the steps in order, over as many connections as the client makes, keeping every
// request it read (with the index of the connection it came on) for the test to inspect.
class ScriptedServer {
 public:
  ScriptedServer(const std::string& path, std::vector<Step> steps) : steps_(std::move(steps)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    join();
    ::close(fd_);
  }
  // Waits until every step was served, then the requests read, in order.
  const std::vector<std::string>& requests() {
    join();
    return requests_;
  }
  // The connection each request came on (0, 1, ...).
  const std::vector<int>& connections() {
    join();
    return connections_;
  }

 private:
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  // One request from `conn` (headers and a Content-Length body); false when the client closed.
  static bool read_request(int conn, std::string& pending, std::string& request) {
    char buffer[4096];
    for (;;) {
      size_t end = pending.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t at = pending.find("Content-Length: ");
        size_t body = at == std::string::npos || at > end
                          ? 0
                          : std::strtoul(pending.c_str() + at + 16, nullptr, 10);
        if (pending.size() >= end + 4 + body) {
          request = pending.substr(0, end + 4 + body);
          pending.erase(0, end + 4 + body);
          return true;
        }
      }
      ssize_t n = ::read(conn, buffer, sizeof(buffer));
      if (n <= 0) return false;
      pending.append(buffer, static_cast<size_t>(n));
    }
  }
  void serve() {
    size_t next = 0;
    for (int connection = 0; next < steps_.size(); ++connection) {
      int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      std::string pending;
      std::string request;
      while (next < steps_.size() && read_request(conn, pending, request)) {
        requests_.push_back(request);
        connections_.push_back(connection);
        const Step& step = steps_[next++];
        std::this_thread::sleep_for(step.delay);
        (void)!::send(conn, step.reply.data(), step.reply.size(),
                      MSG_NOSIGNAL);  // the client may be gone
        if (step.close_after) break;
      }
      ::close(conn);
    }
  }

  std::vector<Step> steps_;
  int fd_ = -1;
  std::thread thread_;
  std::vector<std::string> requests_;
  std::vector<int> connections_;
};

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

using Factory = std::function<std::unique_ptr<Transport>(const std::string& socket)>;

struct Kind {
  std::string name;
  Factory make;
};

class TransportTest : public ::testing::TestWithParam<Kind> {
 protected:
  TransportTest() {
    std::string pattern = (fs::temp_directory_path() / "gpuq-transport-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    socket_ = dir_ + "/gpuq.sock";
  }
  ~TransportTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<Transport> transport() { return GetParam().make(socket_); }
  std::string dir_;
  std::string socket_;
};

TEST_P(TransportTest, GetReturnsStatusHeadersAndBody) {
  ScriptedServer server(
      socket_, {{"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Gpuq-Run: 2\r\n"
                 "X-Gpuq-Log-Size: 5\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello"}});
  auto response = transport()->send({Method::kGet, "/v1/jobs/7/log?offset=0", "", Millis(5000)});
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello");
  EXPECT_EQ(response->header("X-Gpuq-Run"), "2");
  EXPECT_EQ(response->header("x-gpuq-log-size"), "5");
  EXPECT_EQ(response->header("X-Missing"), "");
  const std::string& request = server.requests().at(0);
  EXPECT_TRUE(request.starts_with("GET /v1/jobs/7/log?offset=0 HTTP/1.1\r\n")) << request;
  EXPECT_NE(request.find("Accept: application/json\r\n"), std::string::npos) << request;
  // Every request says which API version the CLI speaks (base/api_version.h).
  EXPECT_NE(request.find("Gpuq-Api: 1\r\n"), std::string::npos) << request;
}

TEST_P(TransportTest, PostSendsAJsonBody) {
  ScriptedServer server(
      socket_, {{"HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"}});
  std::string body(3000, 'x');  // long enough that curl would ask for 100-continue
  auto response = transport()->send({Method::kPost, "/v1/jobs", body, Millis(5000)});
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(response->body, "{}");
  const std::string& request = server.requests().at(0);
  EXPECT_TRUE(request.starts_with("POST /v1/jobs HTTP/1.1\r\n")) << request;
  EXPECT_NE(request.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(request.find("Gpuq-Api: 1\r\n"), std::string::npos) << request;
  EXPECT_EQ(request.find("Expect:"), std::string::npos);
  EXPECT_TRUE(request.ends_with("\r\n\r\n" + body));
}

TEST_P(TransportTest, AChunkedAnswerIsReadWhole) {
  ScriptedServer server(socket_, {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"}});
  auto response = transport()->send({Method::kGet, "/v1/events", "", Millis(5000)});
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->body, "abcde");
}

TEST_P(TransportTest, ConsecutiveRequestsShareAKeptConnection) {
  ScriptedServer server(socket_, {{kOk}, {kOk}, {kOk}});
  auto client = transport();
  for (int i = 0; i < 3; ++i) {
    auto response = client->send({Method::kGet, "/v1/status", "", Millis(5000)});
    ASSERT_TRUE(response) << response.error().message;
    EXPECT_EQ(response->body, "ok");
  }
  EXPECT_EQ(server.connections(), (std::vector<int>{0, 0, 0}));
}

TEST_P(TransportTest, AKeptConnectionTheDaemonClosedIsReplaced) {
  // The daemon answers and then closes the connection, as it does when it stays idle too long:
  // the next request goes out on a new connection, once, and gets its answer.
  ScriptedServer server(socket_, {{kOk, Millis(0), true}, {kOk}});
  auto client = transport();
  ASSERT_TRUE(client->send({Method::kGet, "/v1/status", "", Millis(5000)}));
  auto second = client->send({Method::kPost, "/v1/jobs", "{}", Millis(5000)});
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(second->body, "ok");
  EXPECT_EQ(server.connections(), (std::vector<int>{0, 1}));
  EXPECT_TRUE(server.requests().at(1).starts_with("POST /v1/jobs ")) << server.requests().at(1);
}

TEST_P(TransportTest, ALongPollAnswersWithinItsTimeout) {
  ScriptedServer server(socket_, {{kOk, Millis(300)}});
  auto response = transport()->send({Method::kGet, "/v1/events?wait_ms=300", "", Millis(5000)});
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->body, "ok");
}

TEST_P(TransportTest, MissingSocketIsUnavailable) {
  auto response = transport()->send({Method::kGet, "/v1/status", "", Millis(5000)});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, Code::kUnavailable);
  EXPECT_EQ(response.error().message, "no socket at " + socket_);
}

TEST_P(TransportTest, ASocketNobodyListensOnIsUnavailable) {
  // What a daemon that died leaves behind: the socket file, bound, with no listener.
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::close(fd);
  auto response = transport()->send({Method::kGet, "/v1/status", "", Millis(5000)});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, Code::kUnavailable);
  EXPECT_EQ(response.error().message, "nothing is listening on " + socket_);
}

TEST_P(TransportTest, AFileThatIsNoSocketIsUnavailable) {
  { std::ofstream(socket_) << "x"; }
  auto response = transport()->send({Method::kGet, "/v1/status", "", Millis(5000)});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, Code::kUnavailable);
  EXPECT_EQ(response.error().message, socket_ + " exists but is not a socket");
}

TEST_P(TransportTest, TimeoutIsAnIoError) {
  ScriptedServer server(socket_, {{kOk, Millis(1500)}});
  auto response = transport()->send({Method::kGet, "/v1/status", "", Millis(200)});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, Code::kIoError);
  EXPECT_NE(response.error().message.find("did not answer within 200ms"), std::string::npos)
      << response.error().message;
}

TEST_P(TransportTest, AConnectionCutMidAnswerIsAnIoError) {
  ScriptedServer server(socket_,
                        {{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", Millis(0), true}});
  auto response = transport()->send({Method::kGet, "/v1/status", "", Millis(5000)});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, Code::kIoError);
  EXPECT_EQ(server.requests().size(), 1u);  // not sent again: the daemon had begun to answer
}

INSTANTIATE_TEST_SUITE_P(Kinds, TransportTest,
                         ::testing::Values(Kind{"Socket",
                                                [](const std::string& socket) {
                                                  return SocketTransport::create(socket);
                                                }},
                                           Kind{"Curl",
                                                [](const std::string& socket) {
                                                  auto made = CurlTransport::create(socket);
                                                  EXPECT_TRUE(made);
                                                  return made ? std::move(*made) : nullptr;
                                                }}),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param.name;
                         });

TEST(SocketOwner, OnlyTheUsersOwnSocketOrRootsIsUsed) {
  EXPECT_TRUE(check_socket_owner("/s", 1000, 1000));
  EXPECT_TRUE(check_socket_owner("/s", 0, 1000));   // a system daemon
  EXPECT_TRUE(check_socket_owner("/s", 65533, 0));  // root may talk to any daemon
  auto refused = check_socket_owner("/srv/gpuq/gpuq.sock", 65533, 65534);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kFailedPrecondition);
  EXPECT_TRUE(refused.error().message.starts_with(
      "refusing the socket /srv/gpuq/gpuq.sock: it belongs to uid 65533, not to you (nobody (uid "
      "65534))"))
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("gpuq daemon --detach"), std::string::npos);
}

}  // namespace
}  // namespace gpuq::cli
