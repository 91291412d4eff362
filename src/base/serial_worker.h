// SPDX-License-Identifier: Apache-2.0
// One thread that runs tasks one after another, in the order they were given: for blocking
// work (external commands, file tree walks) that must stay off an actor's thread and need not
// run side by side. Tasks given after the worker began to stop, and tasks still queued when it
// stops, are dropped; the one running is waited for.
// Thread rules: post() from any thread; destroy from a thread that is not the worker's.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace gpuq {

class SerialWorker {
 public:
  SerialWorker();
  ~SerialWorker();  // waits for the task that runs; drops the queued ones
  SerialWorker(const SerialWorker&) = delete;
  SerialWorker& operator=(const SerialWorker&) = delete;

  void post(std::function<void()> task);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace gpuq
