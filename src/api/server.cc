// SPDX-License-Identifier: Apache-2.0
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
#include <cstring>
#include <algorithm>
#include <exception>
#include <malloc.h>
#include <type_traits>
#include <map>
#include <mutex>
#include <pwd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/deadline.h"
#include "base/time.h"
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
  ConnectionCaps caps;
  caps.unix_total = limits::kMaxUnixConnections;
  caps.unix_per_uid = limits::kMaxUnixConnectionsPerUid;
  caps.tcp_anonymous = limits::kMaxAnonymousTcpConnections;
  caps.tcp_authenticated = limits::kMaxAuthenticatedTcpConnections;
  caps.event_streams = limits::kMaxEventStreams;
  // Under a low RLIMIT_NOFILE (a shell's 1024; the service unit sets 1048576) the caps shrink
  // so that a full house never runs the daemon out of descriptors, which would stop the unix
  // socket's accepts too.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    caps = fit_to_descriptors(caps, static_cast<int64_t>(files.rlim_cur), limits::kReservedDescriptors);
  }
  ServerLimits limits{limits::kIdleTimeout, limits::kAnonymousHeadTimeout, caps};
  if (const char* idle = std::getenv("GPUQ_TEST_IDLE_TIMEOUT_MS"); idle != nullptr && *idle != 0) {
    long long ms = std::atoll(idle);
    if (ms > 0) limits.idle_timeout = std::chrono::milliseconds(ms);
  }
  if (const char* write = std::getenv("GPUQ_TEST_WRITE_TIMEOUT_MS"); write != nullptr && *write != 0) {
    long long ms = std::atoll(write);
    if (ms > 0) limits.write_timeout = std::chrono::milliseconds(ms);
  }
  return limits;
}

Server::Server(ServerContext context, std::unique_ptr<store::Store> read_store)
    : context_(std::move(context)),
      limits_(ServerLimits::from_environment()),
      pools_(limits_.caps),
      store_(std::move(read_store)) {}

Server::~Server() { *alive_ = false; }

std::optional<Caller> Server::tcp_caller(const Request& request) const {
  Caller caller;  // the daemon's own token: its user, an admin
  auto identity = tcp_policy_ ? tcp_identity(*tcp_policy_, request) : std::nullopt;
  // Shown when the head was judged, gone now (a sign-out, a revocation or an expiry while the
  // body came): nobody, never the daemon's user.
  if (!identity) return std::nullopt;
  if (!identity->user.empty()) {
    caller.user = identity->user;
    caller.uid = identity->uid;
    caller.admin = is_admin(identity->uid, identity->user, context_.peers);
  }
  return caller;
}

Caller Server::unix_caller(uid_t uid) const {
  Caller caller;
  caller.user = login_name(uid);
  caller.uid = uid;
  caller.admin = is_admin(uid, caller.user, context_.peers);
  return caller;
}

Status Server::listen_unix(const std::string& path, std::optional<gid_t> group) {
  constexpr size_t kMaxPath = sizeof(sockaddr_un::sun_path) - 1;
  if (path.size() > kMaxPath) {
    return fail(Code::kInvalidArgument,
                fmt::format("the socket path {} is {} bytes long, but a unix socket path may have "
                            "at most {}: use a shorter --home (or GPUQ_HOME)",
                            path, path.size(), kMaxPath));
  }
  ::unlink(path.c_str());  // a stale socket of a dead daemon; the lock proved none is alive
  boost::system::error_code ec;
  auto& acceptor = *acceptors_.emplace_back(
      std::make_unique<asio::local::stream_protocol::acceptor>(context_.api_ioc));
  acceptor.open(asio::local::stream_protocol(), ec);
  if (!ec) {
    ::fcntl(acceptor.native_handle(), F_SETFD, FD_CLOEXEC);
    mode_t old = ::umask(0177);  // the socket is born 0600: no window with a wider mode
    acceptor.bind(asio::local::stream_protocol::endpoint(path), ec);
    ::umask(old);
  }
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail(Code::kIoError, "cannot listen on " + path + ": " + ec.message());
  if (group) {
    // A system daemon's socket: its group may connect (root owns it, so only root can widen it).
    if (::chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0 || ::chmod(path.c_str(), 0660) != 0) {
      return fail(Code::kIoError, fmt::format("cannot give {} to its group: {}", path, std::strerror(errno)));
    }
  } else {
    ::chmod(path.c_str(), 0600);
  }
  asio::co_spawn(context_.api_ioc, accept_loop(acceptor), log_exception("the API's accept loop"));
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
  policy.sessions = context_.sessions;
  policy.browser_sessions = context_.browser_sessions;
  if (policy.browser_sessions) policy.browser_sessions->set_daemon_token(policy.token);
  policy.cookie_name = fmt::format("gpuq_session_{}", bound.port);
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
    for (auto& acceptor : acceptors_) acceptor->close();
    if (tcp_acceptor_) tcp_acceptor_->close();
    if (alarm_timer_) alarm_timer_->cancel();
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
    ConnectionClass cls = ConnectionClass::kTcpAnonymous;
    uid_t uid = 0;
    if constexpr (kTcp<Socket>) {
      socket.set_option(asio::ip::tcp::no_delay(true), ec);
    } else {
      // Only the daemon's own user (or root), and on a system daemon the members of its group,
      // may drive it, whatever the socket's mode says: another peer is closed at once and
      // takes no place.
      auto peer = peer_uid(socket.native_handle());
      if (!peer || !may_connect(*peer, context_.peers)) continue;
      cls = ConnectionClass::kUnix;
      uid = *peer;
    }
    // Placed here, not when the session starts, so a burst of accepts cannot pass a cap.
    ConnectionPools::Admission admission = pools_.admit(cls, uid);
    if (admission.displaced) displace(*admission.displaced);
    if (!admission.admitted()) {
      refuse(std::move(socket), no_place(cls, uid));
    } else {
      asio::co_spawn(context_.api_ioc, session(std::move(socket), admission.id),
                     log_exception("an API connection"));
    }
    if (admission.displaced || !admission.admitted()) sound_alarm();
  }
}

template <class Socket>
Server::ConnectionLease::ConnectionLease(Server& server, ConnectionPools::Id id, Socket& socket)
    : server_(server), server_alive_(server.alive_), id_(id) {
  server_.open_[id] = OpenConnection{[&socket] {
    boost::system::error_code ignored;
    socket.cancel(ignored);
  }};
}

Server::ConnectionLease::~ConnectionLease() {
  // A session's frame may be destroyed with the api io_context, after the server.
  if (!*server_alive_) return;
  server_.pools_.release(id_);
  server_.open_.erase(id_);
}

bool Server::ConnectionLease::displaced() const {
  auto it = server_.open_.find(id_);
  return it == server_.open_.end() || it->second.displaced || !server_.pools_.class_of(id_);
}

void Server::displace(ConnectionPools::Id id) {
  auto it = open_.find(id);
  if (it == open_.end() || it->second.displaced) return;
  it->second.displaced = true;
  it->second.cancel();
}

Error Server::no_place(ConnectionClass cls, uid_t uid) const {
  std::string name(connection_class_name(cls));
  int cap = limits_.caps.cap(cls);
  if (cls == ConnectionClass::kUnix && pools_.open_for_uid(uid) >= limits_.caps.unix_per_uid) {
    return {Code::kUnavailable,
            fmt::format("the daemon has too many connections from uid {} ({} open, its share of "
                        "the unix socket's {}) and none of them is idle: close some (event "
                        "streams, long-polls, waits) and try again",
                        uid, pools_.open_for_uid(uid), cap)};
  }
  if (cls == ConnectionClass::kEventStream) {
    return {Code::kUnavailable,
            fmt::format("the daemon has too many event streams open ({}, the most it serves at "
                        "once): close some (dashboard tabs, gpuq events --follow) and try again",
                        cap)};
  }
  return {Code::kUnavailable,
          fmt::format("the daemon has too many connections ({} open of class {}, the most it "
                      "serves at once) and none of them is idle: close some (long-polls, waits) "
                      "and try again",
                      pools_.counts(cls).open, name)};
}

void Server::sound_alarm() {
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now().time_since_epoch()).count();
  RefusalAlarm::Check check = alarm_.check(now, wall_now_ms(), pools_);
  if (check.event) {
    daemon::Queue* queue = &context_.queue;
    asio::post(context_.actor_ioc, [queue, data = std::move(*check.event)]() mutable {
      Status st = queue->record_event("daemon.connections_refused", std::nullopt, std::move(data));
      if (!st) std::fprintf(stderr, "gpuq daemon: %s\n", st.error().message.c_str());
    });
  }
  if (!check.next_ms || alarm_armed_ || closed_) return;
  if (!alarm_timer_) alarm_timer_ = std::make_unique<asio::steady_timer>(context_.api_ioc);
  alarm_armed_ = true;
  alarm_timer_->expires_after(std::chrono::milliseconds(std::max<int64_t>(0, *check.next_ms - now)));
  alarm_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;  // close(): the server is going away
    alarm_armed_ = false;
    sound_alarm();
  });
}

template <class Socket>
void Server::refuse(Socket socket, Error why) {
  if (lingering_refusals_ >= limits::kMaxLingeringRefusals) return;  // closed by its destructor
  // Built apart from the co_await: GCC 12 destroys a brace-initialised temporary (the Error)
  // of a co_await expression twice, a double free.
  Response response = error_response(why);
  asio::co_spawn(context_.api_ioc, answer_refusal(std::move(socket), std::move(response)),
                 log_exception("refusing a connection"));
}

template <class Socket>
awaitable<void> Server::answer_refusal(Socket socket, Response response) {
  ++lingering_refusals_;
  co_await answer_and_close(socket, std::move(response));
  --lingering_refusals_;
}

template <class Socket>
awaitable<void> Server::answer_and_close(Socket& socket, Response response) {
  if constexpr (kTcp<Socket>) add_tcp_headers(response, true);
  add_api_version(response);
  response.keep_alive(false);
  response.prepare_payload();
  SocketDeadline deadline(context_.api_ioc, socket);
  boost::system::error_code ec;
  deadline.arm(limits::kLingerTimeout);
  co_await http::async_write(socket, response, asio::redirect_error(use_awaitable, ec));
  boost::system::error_code shut;
  if (!ec && !deadline.expired()) socket.shutdown(Socket::shutdown_send, shut);
  // Closing with unread input would reset the connection under a client still sending; drain
  // until it closes its end, within the same deadline (a read that completes at once is not
  // cancelled by it, hence the check of the deadline itself).
  std::array<char, 16 << 10> sink;
  while (!ec && !deadline.expired()) {
    co_await socket.async_read_some(asio::buffer(sink), asio::redirect_error(use_awaitable, ec));
  }
  deadline.disarm();
  socket.close(ec);
}

awaitable<Response> Server::answer(const Request& request, Caller caller) {
  std::string what = fmt::format("{} {}", std::string(request.method_string()),
                                 std::string(request.target()));
  awaitable<Response> handled = handle(request, std::move(caller));  // not a temporary of the co_await (see refuse)
  co_return co_await answer_or_internal_error(std::move(handled), std::move(what));
}

template <class Socket>
awaitable<bool> Server::read_request(Socket& socket, ConnectionLease& lease,
                                     boost::beast::flat_buffer& buffer, Request& request,
                                     std::optional<Response>& judged) {
  const ConnectionPools::Id id = lease.id();
  SocketDeadline deadline(context_.api_ioc, socket);
  boost::system::error_code ec;
  RequestParser parser;
  limit_parser(parser);
  // The request, from its first byte to its last, must arrive within the idle timeout, and a
  // TCP connection that has not shown the token must deliver the head within a few seconds. A
  // long-poll or an event stream is not reading, so its wait is not bounded by these.
  const auto started = std::chrono::steady_clock::now();
  const bool anonymous = pools_.class_of(id) == ConnectionClass::kTcpAnonymous;
  pools_.set_idle(id, true);
  deadline.arm(anonymous ? std::min(limits_.anonymous_head_timeout, limits_.idle_timeout)
                         : limits_.idle_timeout);
  co_await http::async_read_header(socket, buffer, parser, asio::redirect_error(use_awaitable, ec));
  deadline.disarm();
  if (lease.displaced()) {
    // A newcomer took its place while it was idle. A head that had arrived all the same is
    // answered, so that its client learns to try again rather than see the connection drop.
    if (!ec && !anonymous && lingering_refusals_ < limits::kMaxLingeringRefusals) {
      ++lingering_refusals_;
      Response response = error_response(
          {Code::kUnavailable, "the daemon closed this connection to make room for another "
                               "(too many were open): try again"});
      co_await answer_and_close(socket, std::move(response));
      --lingering_refusals_;
    }
    co_return false;
  }
  // A TCP connection that has shown nothing stays idle, so displaceable, while it is answered:
  // it holds no one's work, and a client that reads its answers slowly cannot keep its place.
  if (!anonymous) pools_.set_idle(id, false);
  if (!ec) {
    // The head is judged before a byte of the body is read.
    const Request& head = parser.get();
    judged = refuse_ambiguous_framing(head);
    if (judged) {
      Response response = std::move(*judged);
      co_await answer_and_close(socket, std::move(response));
      co_return false;
    }
    if constexpr (kTcp<Socket>) {
      judged = judge_tcp_request(*tcp_policy_, head);
      bool shows_token = request_shows_token(*tcp_policy_, head);
      bool refused = judged && judged->result_int() >= 400;
      if (shows_token && !refused) {
        ConnectionPools::Admission moved = pools_.move(id, ConnectionClass::kTcpAuthenticated);
        if (moved.displaced) displace(*moved.displaced);
        if (moved.displaced || !moved.admitted()) sound_alarm();
        if (!moved.admitted()) {
          Response response = error_response(no_place(ConnectionClass::kTcpAuthenticated, 0));
          co_await answer_and_close(socket, std::move(response));
          co_return false;
        }
      }
    }
    if (!judged) judged = refuse_other_api_version(head);
    if (judged) {
      // Answered without its body: a body still on its way ends the connection after the
      // answer, and so does a refusal on a connection that had shown the token.
      bool was_authenticated = pools_.class_of(id) == ConnectionClass::kTcpAuthenticated;
      if (!parser.is_done() || (judged->result_int() >= 400 && was_authenticated)) {
        Response response = std::move(*judged);
        co_await answer_and_close(socket, std::move(response));
        co_return false;
      }
      request = parser.release();
      co_return true;
    }
    auto left = limits_.idle_timeout - (std::chrono::steady_clock::now() - started);
    deadline.arm(std::max<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(1)));
    co_await http::async_read(socket, buffer, parser, asio::redirect_error(use_awaitable, ec));
    deadline.disarm();
  }
  if (ec) {
    auto refused = deadline.expired() ? std::nullopt : parse_error_response(ec);
    if (refused) co_await answer_and_close(socket, std::move(*refused));
    co_return false;
  }
  request = parser.release();
  co_return true;
}

template <class Socket>
awaitable<void> Server::session(Socket socket, ConnectionPools::Id id) {
  ConnectionLease lease(*this, id, socket);
  Caller caller;  // over TCP, the daemon's own user
  if constexpr (!kTcp<Socket>) {
    auto uid = peer_uid(socket.native_handle());
    if (!uid) co_return;
    caller = unix_caller(*uid);
  }
  SocketDeadline write_deadline(context_.api_ioc, socket);
  boost::beast::flat_buffer buffer;
  buffer.reserve(limits::kRequestReadChunk);
  while (true) {
    boost::system::error_code ec;
    Request request;
    std::optional<Response> judged;  // answered from the head alone (the TCP policy, the version)
    if (!co_await read_request(socket, lease, buffer, request, judged)) co_return;
    if (!judged) {
      Route where = route(request.method(), std::string_view(request.target().data(), request.target().size()));
      if (where.endpoint == Endpoint::kEventStream) {
        // A stream holds its connection until it ends: it takes a place among the streams.
        ConnectionPools::Admission moved = pools_.move(id, ConnectionClass::kEventStream);
        if (moved.displaced) displace(*moved.displaced);
        if (!moved.admitted()) {
          sound_alarm();
          Response response = error_response(no_place(ConnectionClass::kEventStream, 0));
          co_await answer_and_close(socket, std::move(response));
          co_return;
        }
        co_await stream_events(socket, request, where.target);
        break;
      }
    }
    Response response;
    if (judged) {
      response = std::move(*judged);
    } else {
      std::optional<Caller> tcp_who;
      if constexpr (kTcp<Socket>) tcp_who = tcp_caller(request);
      if (kTcp<Socket> && !tcp_who) {
        response = error_response({Code::kUnauthenticated,
                                   "the session or token this request showed ended before its body "
                                   "arrived: sign in again"});
      } else {
        if (tcp_who) caller = *tcp_who;
        response = co_await answer(request, caller);
      }
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
    // A client that does not take its answer does not keep its place for ever; one that has
    // shown nothing gets as long as for its head.
    bool anonymous = pools_.class_of(id) == ConnectionClass::kTcpAnonymous;
    write_deadline.arm(anonymous ? limits_.anonymous_head_timeout : limits_.write_timeout);
    co_await http::async_write(socket, response, asio::redirect_error(use_awaitable, ec));
    write_deadline.disarm();
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
