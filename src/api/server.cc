// Connection handling: accepting on the unix socket, reading requests and writing answers.
#include "api/server.h"

#include <fmt/format.h>
#include <sys/un.h>

#include <boost/beast/core.hpp>
#include <malloc.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuq::api {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using local_socket = asio::local::stream_protocol::socket;

// Requests larger than this are refused: the largest legitimate body is a 1 MiB script plus
// its environment.
constexpr size_t kMaxBodyBytes = 8 << 20;

Server::Server(ServerContext context, std::unique_ptr<store::Store> read_store)
    : context_(std::move(context)), store_(std::move(read_store)) {}

Server::~Server() = default;

Status Server::listen_unix(const std::string& path) {
  constexpr size_t kMaxPath = sizeof(sockaddr_un::sun_path) - 1;
  if (path.size() > kMaxPath) {
    return fail(Code::kInvalidArgument,
                fmt::format("the socket path {} is {} bytes long, but a unix socket path may have "
                            "at most {}: use a shorter --home (or GPUQ_HOME)",
                            path, path.size(), kMaxPath));
  }
  ::unlink(path.c_str());  // a stale socket of a dead daemon; the lock proved none is alive
  boost::system::error_code ec;
  acceptor_ = std::make_unique<asio::local::stream_protocol::acceptor>(context_.api_ioc);
  acceptor_->open(asio::local::stream_protocol(), ec);
  if (!ec) {
    ::fcntl(acceptor_->native_handle(), F_SETFD, FD_CLOEXEC);
    mode_t old = ::umask(0177);  // the socket is born 0600: no window with a wider mode
    acceptor_->bind(asio::local::stream_protocol::endpoint(path), ec);
    ::umask(old);
  }
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(Code::kIoError, "cannot listen on " + path + ": " + ec.message());
  ::chmod(path.c_str(), 0600);
  asio::co_spawn(context_.api_ioc, accept_loop(), asio::detached);
  return ok();
}

void Server::notify_events(int64_t) {
  asio::post(context_.api_ioc, [this] {
    for (auto* timer : waiters_) timer->cancel();
  });
}

void Server::close() {
  asio::post(context_.api_ioc, [this] {
    closed_ = true;
    if (acceptor_) acceptor_->close();
    for (auto* timer : waiters_) timer->cancel();
  });
}

awaitable<void> Server::accept_loop() {
  while (!closed_) {
    boost::system::error_code ec;
    local_socket socket = co_await acceptor_->async_accept(asio::redirect_error(use_awaitable, ec));
    if (ec) {
      if (closed_ || ec == asio::error::operation_aborted) co_return;
      continue;
    }
    ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
    asio::co_spawn(context_.api_ioc, session(std::move(socket)), asio::detached);
  }
}

awaitable<void> Server::session(local_socket socket) {
  // Only the daemon's own user (or root) may drive it, whatever the socket's mode says.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 &&
      peer.uid != ::getuid() && peer.uid != 0) {
    co_return;
  }
  boost::beast::flat_buffer buffer;
  while (true) {
    boost::system::error_code ec;
    http::request_parser<http::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    co_await http::async_read(socket, buffer, parser, asio::redirect_error(use_awaitable, ec));
    if (ec) break;
    Request request = parser.release();
    if (is_event_stream(request)) {
      co_await stream_events(socket, request);  // holds the connection until it ends
      break;
    }
    Response response = co_await handle(request);
    response.version(request.version());
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    co_await http::async_write(socket, response, asio::redirect_error(use_awaitable, ec));
    if (response.body().size() > (1u << 20)) {
      // A large answer (status of many jobs) leaves its freed memory in malloc's arenas.
      Response().swap(response);
      ::malloc_trim(0);
    }
    if (ec || !response.keep_alive()) break;
  }
  boost::system::error_code ignored;
  socket.shutdown(local_socket::shutdown_both, ignored);
}

}  // namespace gpuq::api
