// SPDX-License-Identifier: Apache-2.0
// GET /v1/events/stream: the event log as Server-Sent Events (docs/api.md, "Event stream"). The
// answer is one long chunked body: the events after the client's cursor, then each new event
// as the actor commits it (woken by notify_events(), like the long-poll of GET /v1/events),
// with a keep-alive comment when nothing happened for a while, so that a client or proxy can
// tell a quiet daemon from a dead connection.
#include <fmt/format.h>
#include <memory>
#include <type_traits>

#include <boost/beast/core.hpp>

#include "api/bodies.h"
#include "api/deadline.h"
#include "api/server.h"
#include "model/event.h"

namespace gpuq::api {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

namespace {

constexpr auto kKeepAlive = std::chrono::seconds(15);
constexpr int kBatch = 1000;  // events read and written at a time while catching up
// A client that reads nothing for this long (stopped with Ctrl-Z, wedged) is dropped, so it
// does not hold a coroutine and a socket for ever; it reconnects with Last-Event-ID.
constexpr auto kWriteDeadline = std::chrono::seconds(20);

// What the stream shares with the watch on its socket. The watch's handler may run after the
// stream has ended, so it holds this rather than pointing into the stream's frame.
struct StreamState {
  explicit StreamState(asio::io_context& ioc) : timer(ioc) {}
  asio::steady_timer timer;  // the wait between batches; cancelled to wake the stream
  bool hung_up = false;
  bool done = false;
};

// Wakes the stream as soon as the client closes its end (or sends anything, which an SSE
// client never does), instead of at the next write. Not a coroutine: GCC 12 mishandles
// lambdas with captures that live in coroutine frames.
template <class Socket>
void watch_hangup(Socket& socket, std::shared_ptr<StreamState> state) {
  socket.async_wait(Socket::wait_read, [state](const boost::system::error_code&) {
    if (state->done) return;
    state->hung_up = true;
    state->timer.cancel();
  });
}

// `id: SEQ`, `event: KIND`, `data: ` the Event object of docs/api.md on one line, a blank line.
std::string frames(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) {
    out += fmt::format("id: {}\nevent: {}\ndata: {}\n\n", e.seq, e.kind, event_to_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return out;
}

}  // namespace

template <class Socket>
awaitable<void> Server::stream_events(Socket& socket, const Request& request, const Target& target) {
  constexpr bool tcp = std::is_same_v<Socket, TcpSocket>;
  boost::system::error_code ec;
  // Where the stream starts: after the Last-Event-ID a reconnecting client sends, else after
  // ?after=SEQ, else at the beginning of the log.
  auto cursor = decode_stream_cursor(request, target);
  if (!cursor) {
    Response res = error_response(cursor.error());
    res.version(request.version());
    res.keep_alive(false);
    add_api_version(res);
    if constexpr (tcp) add_tcp_headers(res, true);
    res.prepare_payload();
    co_await http::async_write(socket, res, asio::redirect_error(use_awaitable, ec));
    co_return;
  }
  // HTTP/1.0 has no chunks: its body simply ends when the connection closes.
  bool chunked = request.version() >= 11;
  http::response<http::empty_body> head{http::status::ok, request.version()};
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  head.keep_alive(false);
  head.chunked(chunked);
  add_api_version(head);
  if constexpr (tcp) add_tcp_headers(head, true);
  http::response_serializer<http::empty_body> serializer{head};
  co_await http::async_write_header(socket, serializer, asio::redirect_error(use_awaitable, ec));
  if (ec) co_return;

  auto state = std::make_shared<StreamState>(context_.api_ioc);
  SocketDeadline write_deadline(context_.api_ioc, socket);
  watch_hangup(socket, state);
  int64_t seq = *cursor;
  std::string text;
  bool write_failed = false;
  while (!closed_ && !state->hung_up) {
    // A TCP stream lasts as long as its token: a user's session revoked meanwhile ends it.
    if constexpr (std::is_same_v<Socket, TcpSocket>) {
      if (tcp_policy_ && !request_shows_token(*tcp_policy_, request)) break;
    }
    auto events = store_->events_after(seq, kBatch);
    if (!events) {
      text = fmt::format(": error: {}\n\n", events.error().message);  // then end the stream
    } else if (!events->empty()) {
      text = frames(*events);
      seq = events->back().seq;
    } else {
      // Nothing new: wait for the actor's next commit, the keep-alive, a hang-up or close().
      // No suspension between the read above and this insert, so no commit is missed.
      state->timer.expires_after(kKeepAlive);
      waiters_.insert(&state->timer);
      co_await state->timer.async_wait(asio::redirect_error(use_awaitable, ec));
      waiters_.erase(&state->timer);
      if (ec) continue;  // woken: read again (the loop's test sees a hang-up or close)
      text = ": keepalive\n\n";
    }
    write_deadline.arm(kWriteDeadline);
    if (chunked) {
      co_await asio::async_write(socket, http::make_chunk(asio::buffer(text)),
                                 asio::redirect_error(use_awaitable, ec));
    } else {
      co_await asio::async_write(socket, asio::buffer(text), asio::redirect_error(use_awaitable, ec));
    }
    write_deadline.disarm();
    write_failed = static_cast<bool>(ec);
    if (write_failed || !events) break;
  }
  state->done = true;
  if (chunked && !state->hung_up && !write_failed) {
    co_await asio::async_write(socket, http::make_chunk_last(), asio::redirect_error(use_awaitable, ec));
  }
}

template awaitable<void> Server::stream_events<Server::UnixSocket>(UnixSocket&, const Request&, const Target&);
template awaitable<void> Server::stream_events<Server::TcpSocket>(TcpSocket&, const Request&, const Target&);

}  // namespace gpuq::api
