// SPDX-License-Identifier: Apache-2.0
// Whether the working directories a request names exist, asked off both the actor's thread and
// the API's: a stat on a dead network mount can hang for minutes, and neither thread may. The
// stat runs on a small pool with a deadline; a directory that does not answer in time is
// reported as such, and the stuck pool thread stays stuck alone.
#pragma once

#include <utility>  // before Asio 1.74's awaitable.hpp, which uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/thread_pool.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace gpuq::api {

// One directory to check, and the words that say whose it is ("job 'train': ", or "").
struct DirToCheck {
  std::string where;
  std::string path;
};

class DirChecker {
 public:
  explicit DirChecker(int threads);
  // Joins the pool, unless a check is stuck in the kernel: then the pool is left behind (the
  // process is ending; joining would hang it).
  ~DirChecker();
  DirChecker(const DirChecker&) = delete;
  DirChecker& operator=(const DirChecker&) = delete;

  // ok() when every path is a directory; otherwise `invalid_argument` naming the first that is
  // not (or that did not answer within `deadline`). Answers on the awaiting executor.
  boost::asio::awaitable<Status> check(std::vector<DirToCheck> dirs, std::chrono::milliseconds deadline);

 private:
  std::unique_ptr<boost::asio::thread_pool> pool_;
  std::shared_ptr<std::atomic<int>> in_flight_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace gpuq::api
