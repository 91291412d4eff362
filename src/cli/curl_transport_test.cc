// CurlTransport against a real unix socket: a tiny canned-answer server in a thread stands in
// for the daemon, so the libcurl options (socket path, headers, POST body, timeouts) and the
// classification of failures are checked for real.
#include "cli/curl_transport.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

namespace gpuq::cli {
namespace {

namespace fs = std::filesystem;

// Serves one connection: reads one request (headers and a Content-Length body), then answers
// `reply` verbatim after `delay`. Keeps what it read for the test to inspect.
class OneShotServer {
 public:
  OneShotServer(std::string path, std::string reply, Millis delay = Millis(0))
      : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    thread_ = std::thread([this, reply = std::move(reply), delay] { serve(reply, delay); });
  }
  ~OneShotServer() {
    thread_.join();
    ::close(fd_);
  }
  const std::string& request() {
    thread_.join();
    thread_ = std::thread([] {});
    return request_;
  }

 private:
  void serve(const std::string& reply, Millis delay) {
    int conn = ::accept(fd_, nullptr, nullptr);
    if (conn < 0) return;
    char buffer[4096];
    size_t body_needed = std::string::npos;
    for (;;) {
      ssize_t n = ::read(conn, buffer, sizeof(buffer));
      if (n <= 0) break;
      request_.append(buffer, static_cast<size_t>(n));
      size_t end = request_.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      if (body_needed == std::string::npos) {
        size_t at = request_.find("Content-Length: ");
        body_needed =
            at == std::string::npos ? 0 : std::strtoul(request_.c_str() + at + 16, nullptr, 10);
      }
      if (request_.size() >= end + 4 + body_needed) break;
    }
    std::this_thread::sleep_for(delay);
    (void)!::send(conn, reply.data(), reply.size(), MSG_NOSIGNAL);  // the client may be gone
    ::close(conn);
  }

  std::string path_;
  int fd_ = -1;
  std::thread thread_;
  std::string request_;
};

class CurlTransportTest : public ::testing::Test {
 protected:
  CurlTransportTest() {
    std::string pattern = (fs::temp_directory_path() / "gpuq-curl-XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
    socket_ = dir_ + "/gpuq.sock";
  }
  ~CurlTransportTest() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<Transport> transport() {
    auto made = CurlTransport::create(socket_);
    EXPECT_TRUE(made);
    return std::move(*made);
  }
  std::string dir_;
  std::string socket_;
};

TEST_F(CurlTransportTest, GetReturnsStatusHeadersAndBody) {
  OneShotServer server(socket_,
                       "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Gpuq-Run: 2\r\n"
                       "X-Gpuq-Log-Size: 5\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  auto response = transport()->send({Method::kGet, "/v1/jobs/7/log?offset=0", "", Millis(5000)});
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello");
  EXPECT_EQ(response->header("X-Gpuq-Run"), "2");
  EXPECT_EQ(response->header("x-gpuq-log-size"), "5");
  EXPECT_EQ(response->header("X-Missing"), "");
  EXPECT_TRUE(server.request().starts_with("GET /v1/jobs/7/log?offset=0 HTTP/1.1\r\n"))
      << server.request();
}

TEST_F(CurlTransportTest, PostSendsAJsonBody) {
  OneShotServer server(socket_,
                       "HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\nConnection: close\r\n"
                       "\r\n{}");
  std::string body(3000, 'x');  // long enough that curl would ask for 100-continue
  auto response = transport()->send({Method::kPost, "/v1/jobs", body, Millis(5000)});
  ASSERT_TRUE(response) << response.error().message;
  EXPECT_EQ(response->status, 400);
  const std::string& request = server.request();
  EXPECT_TRUE(request.starts_with("POST /v1/jobs HTTP/1.1\r\n")) << request;
  EXPECT_NE(request.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_EQ(request.find("Expect:"), std::string::npos);
  EXPECT_TRUE(request.ends_with("\r\n\r\n" + body));
}

TEST_F(CurlTransportTest, MissingSocketIsUnavailable) {
  auto response = transport()->send({Method::kGet, "/v1/status", "", Millis(5000)});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, Code::kUnavailable);
  EXPECT_EQ(response.error().message, "no socket at " + socket_);
}

TEST_F(CurlTransportTest, TimeoutIsAnIoError) {
  OneShotServer server(socket_, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", Millis(1500));
  auto response = transport()->send({Method::kGet, "/v1/status", "", Millis(200)});
  ASSERT_FALSE(response);
  EXPECT_EQ(response.error().code, Code::kIoError);
  EXPECT_NE(response.error().message.find("did not answer within 200ms"), std::string::npos)
      << response.error().message;
}

TEST(SocketOwner, OnlyTheUsersOwnSocketOrRootsIsUsed) {
  EXPECT_TRUE(check_socket_owner("/s", 1000, 1000));
  EXPECT_TRUE(check_socket_owner("/s", 0, 1000));     // a system daemon
  EXPECT_TRUE(check_socket_owner("/s", 65533, 0));    // root may talk to any daemon
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
