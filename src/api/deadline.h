// SPDX-License-Identifier: Apache-2.0
// A deadline for the operation under way on a connection: when it passes before disarm(), the
// socket's pending operations are cancelled (they complete with operation_aborted) and the
// socket is shut down (so that no later operation waits), which is
// how the server ends a connection that stalls (a request that does not arrive, an event
// stream whose client stopped reading, a lingering close).
// The timer's handler may run after the operation finished or after the owner is gone, so it
// shares its state with the owner instead of pointing into a coroutine frame, and it acts only
// for the arming it was set for. Not a coroutine: GCC 12 mishandles lambdas with captures that
// live in coroutine frames.
// Owns its timer, not the socket (a unix or a TCP one), which must outlive it. Use on the socket's io_context thread.
#pragma once

#include <chrono>
#include <memory>

#include "base/asio.h"

namespace gpuq::api {

template <class Socket>
class SocketDeadline {
 public:
  SocketDeadline(boost::asio::io_context& ioc, Socket& socket)
      : state_(std::make_shared<State>(ioc, socket)) {}
  ~SocketDeadline() {
    state_->socket = nullptr;  // a handler still queued finds no socket and does nothing
    state_->timer.cancel();
  }
  SocketDeadline(const SocketDeadline&) = delete;
  SocketDeadline& operator=(const SocketDeadline&) = delete;

  // For the operation about to start: cancel it unless disarm() comes within `limit`.
  void arm(std::chrono::steady_clock::duration limit) {
    uint64_t arming = ++state_->arming;
    state_->timer.expires_after(limit);
    state_->timer.async_wait([state = state_, arming](const boost::system::error_code& ec) {
      if (ec || state->socket == nullptr || state->arming != arming) return;
      state->expired = true;
      boost::system::error_code ignored;
      state->socket->cancel(ignored);
      // A read that had completed when the timer fired is not cancelled, and a composed
      // operation (Beast's reads) would start its next read unbounded: after a shutdown every
      // later read and write fails at once. Every owner ends the connection when it expires.
      state->socket->shutdown(Socket::shutdown_both, ignored);
    });
  }

  // The operation is over: a deadline still queued for it does nothing.
  void disarm() {
    ++state_->arming;
    state_->timer.cancel();
  }

  // Whether a deadline passed and cancelled an operation.
  bool expired() const { return state_->expired; }

 private:
  struct State {
    State(boost::asio::io_context& ioc, Socket& s) : timer(ioc), socket(&s) {}
    boost::asio::steady_timer timer;
    Socket* socket;
    uint64_t arming = 0;
    bool expired = false;
  };
  std::shared_ptr<State> state_;
};

}  // namespace gpuq::api
