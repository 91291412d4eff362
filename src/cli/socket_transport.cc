// SPDX-License-Identifier: Apache-2.0
// The one file of the CLI that includes Beast and Asio (socket_transport.h says why).
#include "cli/socket_transport.h"

#include <fmt/format.h>
#include <sys/un.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <limits>

#include "base/api_version.h"
#include "base/ascii.h"
#include "base/asio.h"  // first: it fixes an include bug of Boost 1.74's Asio
#include "base/paths.h"

namespace gpuq::cli {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using Clock = std::chrono::steady_clock;
using Socket = asio::local::stream_protocol::socket;
using ErrorCode = boost::system::error_code;

struct SocketTransport::Connection {
  // One thread drives it (the caller of send), so the io_context needs no locking.
  asio::io_context io{1};
  Socket socket{io};
  beast::flat_buffer buffer;  // what the parser read past the last answer
  // Beast reads as much as the buffer has room for, at least 512 bytes: room for a whole
  // status answer lets one recv take it (at 512 bytes, a 6 KiB answer took 12 reads).
  Connection() { buffer.reserve(kReadSize); }
  static constexpr size_t kReadSize = 64 * 1024;
};

namespace {

// A daemon's answers are at most a few MiB (a status of a long queue); a header this long is
// not one of them.
constexpr uint32_t kHeaderLimit = 64 * 1024;

void close(Socket& socket) {
  ErrorCode ignored;
  socket.close(ignored);
}

// Runs the io_context until the one operation started on `connection` has finished (its
// handler set `done`) or `deadline` has passed. On the deadline, closes the socket, which ends
// the operation with operation_aborted, lets that handler run, and returns false.
bool run_until(SocketTransport::Connection& connection, const bool& done,
               Clock::time_point deadline) {
  connection.io.restart();
  while (!done && connection.io.run_one_until(deadline) > 0) {
  }
  if (done) return true;
  close(connection.socket);
  connection.io.restart();
  connection.io.run();
  return false;
}

Error timed_out(Millis timeout) {
  return {Code::kIoError,
          fmt::format("the daemon did not answer within {}", format_duration(timeout))};
}

Error connect_error(const ErrorCode& ec, const std::string& path) {
  switch (ec.value()) {  // Asio reports connect(2)'s errno in the system category
    case EACCES:
    case EPERM:
      if (path == system_socket_path()) {
        return {Code::kFailedPrecondition,
                fmt::format("permission denied connecting to {}: the box's daemon serves the members "
                            "of its group ([users] group, gpuq by default); ask an admin to add you "
                            "(sudo adduser $USER gpuq), then log in again",
                            path)};
      }
      return {Code::kFailedPrecondition,
              fmt::format("permission denied connecting to {} (is the daemon run by another user?)",
                          path)};
    case ENOENT:
      return {Code::kUnavailable, "no socket at " + path};
    case ECONNREFUSED:
      return {Code::kUnavailable, fmt::format("nothing is listening on {}", path)};
    default:
      return {Code::kIoError,
              fmt::format("talking to the daemon at {} failed: {}", path, ec.message())};
  }
}

// The errors of a kept connection that the daemon closed while it was idle.
bool closed_by_peer(const ErrorCode& ec) {
  return ec == http::error::end_of_stream || ec == asio::error::eof ||
         ec == asio::error::connection_reset || ec == asio::error::broken_pipe;
}

// How one request on an open connection ended. `stale`: it failed before any byte of an answer
// came, in a way that says the daemon had closed the connection (so the request was not read).
struct Exchange {
  Result<HttpResponse> answer;
  bool stale = false;
};

Exchange exchange(SocketTransport::Connection& connection, const HttpRequest& request,
                  const std::string& path, Clock::time_point deadline) {
  http::request<http::string_body> message{
      request.method == Method::kPost ? http::verb::post : http::verb::get, request.target, 11};
  message.set(http::field::host, "gpuq");
  message.set(http::field::accept, "application/json");
  message.set(kApiVersionHeader, std::to_string(kApiVersion));
  if (request.method == Method::kPost) {
    message.set(http::field::content_type, "application/json");
    message.body() = request.body;
  }
  message.keep_alive(true);
  message.prepare_payload();

  auto failed = [&](const ErrorCode& ec, bool got_some) {
    close(connection.socket);
    return Exchange{
        tl::unexpected(Error{Code::kIoError, fmt::format("talking to the daemon at {} failed: {}",
                                                         path, ec.message())}),
        !got_some && closed_by_peer(ec)};
  };

  bool done = false;
  ErrorCode result;
  http::async_write(connection.socket, message, [&](const ErrorCode& ec, size_t) {
    result = ec;
    done = true;
  });
  if (!run_until(connection, done, deadline)) return {tl::unexpected(timed_out(request.timeout))};
  if (result) return failed(result, false);

  http::response_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  done = false;
  http::async_read(connection.socket, connection.buffer, parser, [&](const ErrorCode& ec, size_t) {
    result = ec;
    done = true;
  });
  if (!run_until(connection, done, deadline)) return {tl::unexpected(timed_out(request.timeout))};
  if (result) return failed(result, parser.got_some());

  auto& answer = parser.get();
  HttpResponse response;
  response.status = static_cast<long>(answer.result_int());
  for (const auto& field : answer) {
    const auto name = field.name_string();
    response.headers[ascii_lower({name.data(), name.size()})] = std::string(field.value());
  }
  response.body = std::move(answer.body());
  if (!answer.keep_alive()) close(connection.socket);
  return {std::move(response)};
}

}  // namespace

std::unique_ptr<Transport> SocketTransport::create(std::string socket_path) {
  return std::unique_ptr<Transport>(new SocketTransport(std::move(socket_path)));
}

SocketTransport::SocketTransport(std::string socket_path)
    : socket_path_(std::move(socket_path)), connection_(std::make_unique<Connection>()) {}

SocketTransport::~SocketTransport() = default;

Result<HttpResponse> SocketTransport::send(const HttpRequest& request) {
  if (auto st = check_daemon_socket(socket_path_); !st) return tl::unexpected(st.error());
  const Clock::time_point deadline = Clock::now() + request.timeout;
  Connection& connection = *connection_;
  if (connection.socket.is_open()) {
    Exchange kept = exchange(connection, request, socket_path_, deadline);
    if (!kept.stale) return std::move(kept.answer);
    // The daemon closed the kept connection while it was idle: the request never reached it,
    // so it is sent again on a new connection, as any HTTP client does.
  }

  if (socket_path_.size() >= sizeof(sockaddr_un::sun_path)) {
    return fail(Code::kIoError, fmt::format("cannot use {}: the path is longer than a unix socket "
                                            "address allows ({} bytes)",
                                            socket_path_, sizeof(sockaddr_un::sun_path) - 1));
  }
  connection.buffer.clear();
  bool done = false;
  ErrorCode result;
  connection.socket.async_connect(asio::local::stream_protocol::endpoint(socket_path_),
                                  [&](const ErrorCode& ec) {
                                    result = ec;
                                    done = true;
                                  });
  if (!run_until(connection, done, std::min(deadline, Clock::now() + kConnectTimeout))) {
    return fail(Code::kIoError,
                fmt::format("the daemon did not accept a connection on {} within {}", socket_path_,
                            format_duration(std::min(request.timeout, kConnectTimeout))));
  }
  if (result) {
    close(connection.socket);
    return tl::unexpected(connect_error(result, socket_path_));
  }
  return std::move(exchange(connection, request, socket_path_, deadline).answer);
}

}  // namespace gpuq::cli
