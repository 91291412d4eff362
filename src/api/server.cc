// Connection handling: accepting on the unix socket and the TCP listener, reading requests
// within the listener's limits and writing answers. One session code path for both socket
// types; a TCP request is judged by api/http_policy.h first, and every TCP answer carries its
// headers.
#include "api/server.h"

#include <fmt/format.h>
#include <sys/un.h>

#include <boost/beast/core.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <malloc.h>
#include <type_traits>
#include <map>
#include <mutex>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/deadline.h"
#include "model/limits.h"

namespace gpuq::api {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using local_socket = asio::local::stream_protocol::socket;
using tcp_socket = asio::ip::tcp::socket;

namespace {

template <class Socket>
constexpr bool kTcp = std::is_same_v<Socket, tcp_socket>;

// The completion of a detached coroutine: a coroutine that ends by an exception (a bug) is
// logged and dropped, and the daemon goes on. Without it, asio::detached would drop it
// silently.
auto log_exception(const char* what) {
  return [what](const std::exception_ptr& error) {
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpuq daemon: internal error in %s: %s\n", what, e.what());
    } catch (...) {
      std::fprintf(stderr, "gpuq daemon: internal error in %s\n", what);
    }
  };
}

}  // namespace

ServerLimits ServerLimits::from_environment() {
  ServerLimits limits{limits::kIdleTimeout, limits::kMaxConnections};
  if (const char* idle = std::getenv("GPUQ_TEST_IDLE_TIMEOUT_MS"); idle != nullptr && *idle != 0) {
    long long ms = std::atoll(idle);
    if (ms > 0) limits.idle_timeout = std::chrono::milliseconds(ms);
  }
  return limits;
}

bool peer_is_trusted(int fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || len != sizeof peer) return false;
  return peer.uid == ::getuid() || peer.uid == 0;
}

std::string peer_user_name(int fd) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || len != sizeof peer) return "";
  // Looked up once per uid (a directory service may be slow); trusted peers are few.
  static std::mutex mutex;
  static std::map<uid_t, std::string> names;
  std::lock_guard lock(mutex);
  if (auto it = names.find(peer.uid); it != names.end()) return it->second;
  std::string buf(16 << 10, '\0');
  passwd pw{};
  passwd* found = nullptr;
  std::string name = std::to_string(peer.uid);  // as os::user_name names a uid without a name
  if (::getpwuid_r(peer.uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr && found->pw_name[0] != '\0') {
    name = found->pw_name;
  }
  names.emplace(peer.uid, name);
  return name;
}

Server::Server(ServerContext context, std::unique_ptr<store::Store> read_store)
    : context_(std::move(context)),
      limits_(ServerLimits::from_environment()),
      store_(std::move(read_store)) {}

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
  asio::co_spawn(context_.api_ioc, accept_loop(*acceptor_), log_exception("the API's accept loop"));
  return ok();
}

Status Server::listen_tcp(const ListenAddress& address, TcpPolicy policy) {
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(address.host, ec);
  if (ec) return fail(Code::kInvalidArgument, fmt::format("cannot listen on {}: {}", address.text(), ec.message()));
  asio::ip::tcp::endpoint endpoint(ip, address.port);
  tcp_acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(context_.api_ioc);
  tcp_acceptor_->open(endpoint.protocol(), ec);
  if (!ec) {
    ::fcntl(tcp_acceptor_->native_handle(), F_SETFD, FD_CLOEXEC);
    tcp_acceptor_->set_option(asio::socket_base::reuse_address(true), ec);  // TIME_WAIT of a restart
  }
  if (!ec) tcp_acceptor_->bind(endpoint, ec);
  if (!ec) tcp_acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    tcp_acceptor_.reset();
    Code code = ec == asio::error::address_in_use ? Code::kUnavailable : Code::kIoError;
    return fail(code, fmt::format("cannot listen on {}: {}", address.text(), ec.message()));
  }
  ListenAddress bound = address;
  bound.port = tcp_acceptor_->local_endpoint(ec).port();
  tcp_listen_ = bound.text();
  tcp_policy_ = std::move(policy);
  asio::co_spawn(context_.api_ioc, accept_loop(*tcp_acceptor_), log_exception("the HTTP listener's accept loop"));
  return ok();
}

nlohmann::json Server::http_info() const {
  if (!tcp_policy_) return nullptr;
  return {{"listen", tcp_listen_}, {"allow_submit", tcp_policy_->allow_submit}};
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
    if (tcp_acceptor_) tcp_acceptor_->close();
    for (auto* timer : waiters_) timer->cancel();
  });
}

template <class Acceptor>
awaitable<void> Server::accept_loop(Acceptor& acceptor) {
  using Socket = typename Acceptor::protocol_type::socket;
  asio::steady_timer pause(context_.api_ioc);
  while (!closed_) {
    boost::system::error_code ec;
    Socket socket = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
    if (ec) {
      if (closed_ || ec == asio::error::operation_aborted) co_return;
      // Out of file descriptors (or memory): the failure repeats at once, so pause rather than
      // spin, and let open connections end meanwhile.
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
    if constexpr (kTcp<Socket>) socket.set_option(asio::ip::tcp::no_delay(true), ec);
    if (connections_ >= limits_.max_connections) {
      asio::co_spawn(context_.api_ioc, refuse(std::move(socket)), log_exception("refusing a connection"));
      continue;
    }
    // Counted here, not when the session starts, so a burst of accepts cannot pass the cap.
    ConnectionSlot slot(connections_);
    asio::co_spawn(context_.api_ioc, session(std::move(socket), std::move(slot)),
                   log_exception("an API connection"));
  }
}

template <class Socket>
awaitable<void> Server::refuse(Socket socket) {
  // Built apart from the co_await: GCC 12 destroys a brace-initialised temporary (the Error)
  // of a co_await expression twice, a double free.
  Response response = error_response(
      {Code::kUnavailable,
       fmt::format("the daemon has too many connections ({} open, the most it serves at once): "
                   "close idle ones (event streams, long-polls) and try again",
                   connections_)});
  co_await answer_and_close(socket, std::move(response));
}

template <class Socket>
awaitable<void> Server::answer_and_close(Socket& socket, Response response) {
  if constexpr (kTcp<Socket>) add_tcp_headers(response, true);
  response.keep_alive(false);
  response.prepare_payload();
  SocketDeadline deadline(context_.api_ioc, socket);
  boost::system::error_code ec;
  deadline.arm(limits::kLingerTimeout);
  co_await http::async_write(socket, response, asio::redirect_error(use_awaitable, ec));
  socket.shutdown(Socket::shutdown_send, ec);
  // Closing with unread input would reset the connection under a client still sending; drain
  // until it closes its end, within the same deadline.
  std::array<char, 16 << 10> sink;
  while (!ec) {
    co_await socket.async_read_some(asio::buffer(sink), asio::redirect_error(use_awaitable, ec));
  }
  deadline.disarm();
  socket.close(ec);
}

awaitable<Response> Server::answer(const Request& request, std::string user) {
  std::string what = fmt::format("{} {}", std::string(request.method_string()),
                                 std::string(request.target()));
  awaitable<Response> handled = handle(request, std::move(user));  // not a temporary of the co_await (see refuse)
  co_return co_await answer_or_internal_error(std::move(handled), std::move(what));
}

template <class Socket>
awaitable<void> Server::session(Socket socket, ConnectionSlot) {
  // Only the daemon's own user (or root) may drive it, whatever the socket's mode says. Over
  // TCP, the policy judges each request instead.
  std::string user;  // recorded with its submits; over TCP, the daemon's own user
  if constexpr (!kTcp<Socket>) {
    if (!peer_is_trusted(socket.native_handle())) co_return;
    user = peer_user_name(socket.native_handle());
  }
  SocketDeadline deadline(context_.api_ioc, socket);
  boost::beast::flat_buffer buffer;
  while (true) {
    boost::system::error_code ec;
    RequestParser parser;
    limit_parser(parser);
    // The request, from its first byte to its last, must arrive within the idle timeout; a
    // long-poll or an event stream is not reading, so its wait is not bounded by this.
    deadline.arm(limits_.idle_timeout);
    co_await http::async_read(socket, buffer, parser, asio::redirect_error(use_awaitable, ec));
    deadline.disarm();
    if (ec) {
      auto refused = deadline.expired() ? std::nullopt : parse_error_response(ec);
      if (refused) co_await answer_and_close(socket, std::move(*refused));
      co_return;
    }
    Request request = parser.release();
    std::optional<Response> judged;  // a TCP request answered by the policy itself
    if constexpr (kTcp<Socket>) judged = judge_tcp_request(*tcp_policy_, request);
    if (!judged) judged = refuse_other_api_version(request);
    if (!judged) {
      Route where = route(request.method(), std::string_view(request.target().data(), request.target().size()));
      if (where.endpoint == Endpoint::kEventStream) {
        co_await stream_events(socket, request, where.target);  // holds the connection until it ends
        break;
      }
    }
    Response response;
    if (judged) {
      response = std::move(*judged);
    } else {
      response = co_await answer(request, user);
      if constexpr (kTcp<Socket>) add_tcp_headers(response, true);
    }
    add_api_version(response);
    response.version(request.version());
    response.keep_alive(request.keep_alive());
    response.prepare_payload();
    if (request.method() == http::verb::head) {
      // The length the body would have, without the body.
      size_t length = response.body().size();
      response.body().clear();
      if (response.result() != http::status::not_modified) response.content_length(length);
    }
    co_await http::async_write(socket, response, asio::redirect_error(use_awaitable, ec));
    if (response.body().size() > (1u << 20)) {
      // A large answer (status of many jobs) leaves its freed memory in malloc's arenas.
      Response().swap(response);
      ::malloc_trim(0);
    }
    if (ec || !response.keep_alive()) break;
  }
  boost::system::error_code ignored;
  socket.shutdown(Socket::shutdown_both, ignored);
}

}  // namespace gpuq::api
