// SPDX-License-Identifier: Apache-2.0
// Runs work on the queue actor's thread from an API coroutine (docs/architecture.md: the actor
// owns the queue; the API threads only read their own store connections and hand commands
// over). on_actor answers with the work's result; on_actor_later with what the work hands to
// its `done` callback, for work that finishes later.
#pragma once

#include <exception>
#include <memory>
#include <utility>

#include "base/asio.h"

namespace gpuq::api {

// Runs `fn` on the queue actor's thread; the awaiting coroutine resumes on its own executor
// with the result. Deliberately not a coroutine itself: GCC 12 mishandles lambdas with
// captures that live in coroutine frames, so the work travels in plain handlers.
// An exception thrown by `fn` (a bug) must not unwind the actor's io_context, which would end
// the daemon: it travels back and is rethrown in the awaiting coroutine, whose request then
// answers 500 (answer_or_internal_error).
template <class R, class Fn>
auto on_actor(boost::asio::io_context& actor, Fn fn) {
  return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(std::exception_ptr, R)>(
      [&actor](auto handler, Fn work) {
        boost::asio::post(actor, [handler = std::move(handler), work = std::move(work)]() mutable {
          std::exception_ptr error;
          R result{};
          try {
            result = work();
          } catch (...) {
            error = std::current_exception();
          }
          auto executor = boost::asio::get_associated_executor(handler);
          boost::asio::post(executor, [handler = std::move(handler), error, result = std::move(result)]() mutable {
            std::move(handler)(error, std::move(result));
          });
        });
      },
      boost::asio::use_awaitable, std::move(fn));
}

// Like on_actor, for work that answers later: `fn(done)` runs on the actor's thread and calls
// `done(result)` there, once, when the work has finished (a prune that removes directories
// off the actor's thread first).
template <class R, class Fn>
auto on_actor_later(boost::asio::io_context& actor, Fn fn) {
  return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(std::exception_ptr, R)>(
      [&actor](auto handler, Fn work) {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        boost::asio::post(actor, [shared, work = std::move(work)]() mutable {
          auto answer = [shared](std::exception_ptr error, R result) {
            auto executor = boost::asio::get_associated_executor(*shared);
            boost::asio::post(executor, [shared, error, result = std::move(result)]() mutable {
              std::move (*shared)(error, std::move(result));
            });
          };
          try {
            work([answer](R result) { answer(nullptr, std::move(result)); });
          } catch (...) {
            answer(std::current_exception(), R{});
          }
        });
      },
      boost::asio::use_awaitable, std::move(fn));
}

}  // namespace gpuq::api
