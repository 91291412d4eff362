// SPDX-License-Identifier: Apache-2.0
#include "tcp_proxy.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace gpuq::fleet::testing {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const sockaddr_in address = loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

struct TcpProxy::Connection {
  int client = -1;
  int target = -1;
  std::thread to_target;
  std::thread to_client;
  std::atomic<int> ended{0};              // pumps that have stopped
  std::atomic<bool> request_sent{false};  // bytes went to the target since its last answer

  void shut() const {
    ::shutdown(client, SHUT_RDWR);
    ::shutdown(target, SHUT_RDWR);
  }
};

Result<std::unique_ptr<TcpProxy>> TcpProxy::start(int target_port) {
  std::unique_ptr<TcpProxy> proxy(new TcpProxy(target_port));
  if (auto st = proxy->listen_on(0); !st) return tl::unexpected(st.error());
  return proxy;
}

TcpProxy::TcpProxy(int target_port) : target_port_(target_port) {}

TcpProxy::~TcpProxy() { cut(); }

std::string TcpProxy::endpoint() const { return fmt::format("http://127.0.0.1:{}", port_); }

Status TcpProxy::listen_on(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno_error("socket");
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  sockaddr_in address = loopback(port);
  socklen_t size = sizeof(address);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), size) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    auto error = errno_error(fmt::format("listen on 127.0.0.1:{}", port));
    ::close(fd);
    return error;
  }
  std::lock_guard lock(mutex_);
  port_ = ntohs(address.sin_port);
  listener_ = fd;
  acceptor_ = std::thread([this, fd] { accept_loop(fd); });
  return ok();
}

void TcpProxy::accept_loop(int listener) {
  while (true) {
    const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // cut: the listener was shut down
    }
    const int target = connect_to(target_port_);
    if (target < 0) {
      ::close(client);
      continue;
    }
    reap(false);
    std::lock_guard lock(mutex_);
    auto& connection = *connections_.emplace_back(std::make_unique<Connection>());
    connection.client = client;
    connection.target = target;
    connection.to_target = std::thread([this, &connection] { pump(connection, false); });
    connection.to_client = std::thread([this, &connection] { pump(connection, true); });
  }
}

void TcpProxy::pump(Connection& connection, bool to_client) {
  const int from = to_client ? connection.target : connection.client;
  const int to = to_client ? connection.client : connection.target;
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = ::recv(from, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (to_client && connection.request_sent.exchange(false)) {
      int left = answers_to_lose_.load();
      while (left > 0 && !answers_to_lose_.compare_exchange_weak(left, left - 1)) {
      }
      if (left > 0) {  // this answer is lost: close both ends
        ++answers_lost_;
        break;
      }
    }
    if (!to_client) connection.request_sent = true;
    if (!write_all(to, buffer, static_cast<size_t>(n))) break;
  }
  connection.shut();
  ++connection.ended;
}

void TcpProxy::reap(bool all) {
  std::lock_guard lock(mutex_);
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection& connection = **it;
    if (!all && connection.ended < 2) {
      ++it;
      continue;
    }
    connection.shut();
    connection.to_target.join();
    connection.to_client.join();
    ::close(connection.client);
    ::close(connection.target);
    it = connections_.erase(it);
  }
}

void TcpProxy::cut() {
  int listener = -1;
  {
    std::lock_guard lock(mutex_);
    std::swap(listener, listener_);
  }
  if (listener >= 0) ::shutdown(listener, SHUT_RDWR);  // wakes accept()
  if (acceptor_.joinable()) acceptor_.join();
  if (listener >= 0) ::close(listener);
  reap(true);
}

Status TcpProxy::restore() {
  {
    std::lock_guard lock(mutex_);
    if (listener_ >= 0) return ok();
  }
  return listen_on(port_);
}

}  // namespace gpuq::fleet::testing
