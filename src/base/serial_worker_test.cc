// SPDX-License-Identifier: Apache-2.0
#include "base/serial_worker.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <vector>

namespace gpuq {
namespace {

TEST(SerialWorker, RunsTasksOneAfterAnotherInOrder) {
  std::mutex mutex;
  std::vector<int> order;
  std::promise<void> last;
  {
    SerialWorker worker;
    for (int i = 0; i < 100; ++i) {
      worker.post([&, i] {
        std::lock_guard lock(mutex);
        order.push_back(i);
      });
    }
    worker.post([&] { last.set_value(); });
    last.get_future().wait();
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(SerialWorker, StoppingWaitsForTheRunningTask) {
  std::promise<void> began;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  bool first_finished = false;
  std::thread stopper;
  {
    auto worker = std::make_unique<SerialWorker>();
    worker->post([&] {
      began.set_value();
      released.wait();
      first_finished = true;
    });
    began.get_future().wait();
    stopper = std::thread([&] { worker.reset(); });
    // The destructor is now waiting for the running task; let it end.
    release.set_value();
    stopper.join();
  }
  EXPECT_TRUE(first_finished);
}

}  // namespace
}  // namespace gpuq
