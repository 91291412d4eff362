// SPDX-License-Identifier: Apache-2.0
#include "api/dir_check.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "base/duration.h"

namespace gpuq::api {

namespace asio = boost::asio;

namespace {

Status check_on_this_thread(const std::vector<DirToCheck>& dirs) {
  for (const auto& dir : dirs) {
    if (dir.path.empty() || dir.path[0] != '/') continue;  // the queue says it must be absolute
    std::error_code ec;
    if (!std::filesystem::is_directory(dir.path, ec)) {
      return fail(Code::kInvalidArgument,
                  fmt::format("{}the working directory {} does not exist or is not a directory; "
                              "create it or give another cwd",
                              dir.where, dir.path));
    }
  }
  return ok();
}

}  // namespace

DirChecker::DirChecker(int threads) : pool_(std::make_unique<asio::thread_pool>(threads)) {}

DirChecker::~DirChecker() {
  pool_->stop();
  if (in_flight_->load() > 0) (void)pool_.release();
}

// Deliberately not a coroutine (see on_actor in handlers.cc: GCC 12 mishandles lambdas with
// captures that live in coroutine frames): the work travels in plain handlers.
asio::awaitable<Status> DirChecker::check(std::vector<DirToCheck> dirs, std::chrono::milliseconds deadline) {
  // The stat and the deadline race; the first to finish answers, on the awaiting executor.
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(Status)>(
      [pool = pool_.get(), in_flight = in_flight_, deadline](auto handler, std::vector<DirToCheck> dirs) {
        using Handler = decltype(handler);
        asio::any_io_executor executor = asio::get_associated_executor(handler);
        if (dirs.empty()) {
          asio::post(executor, [handler = std::move(handler)]() mutable { std::move(handler)(ok()); });
          return;
        }
        struct Race {
          Race(asio::any_io_executor e, Handler h) : timer(std::move(e)), handler(std::move(h)) {}
          asio::steady_timer timer;
          std::optional<Handler> handler;
          void answer(Status status) {
            if (!handler) return;
            Handler h = std::move(*handler);
            handler.reset();
            timer.cancel();
            std::move(h)(std::move(status));
          }
        };
        auto race = std::make_shared<Race>(executor, std::move(handler));
        std::string first = dirs.front().where + dirs.front().path;
        race->timer.expires_after(deadline);
        race->timer.async_wait([race, first, deadline](boost::system::error_code ec) {
          if (ec) return;  // the stat answered first
          race->answer(fail(Code::kInvalidArgument,
                            fmt::format("checking the working directory ({}) did not answer within {}; "
                                        "is it on a network mount that hangs?",
                                        first, format_duration(Millis(deadline.count())))));
        });
        ++*in_flight;
        asio::post(*pool, [race, in_flight, executor, dirs = std::move(dirs)] {
          Status status = check_on_this_thread(dirs);
          --*in_flight;
          asio::post(executor, [race, status = std::move(status)]() mutable { race->answer(std::move(status)); });
        });
      },
      asio::use_awaitable, std::move(dirs));
}

}  // namespace gpuq::api
