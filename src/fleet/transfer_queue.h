// SPDX-License-Identifier: Apache-2.0
// Where the fleet agent's transfers run: off its thread, so that claims, renewals, polls and
// heartbeats go on while a checkpoint of tens of GiB moves (docs/fleet.md, "Declared data").
// The agent hands over a Work (a function of a data store) and keeps the shared state the work
// fills in; it looks at that state again at its next step (and is nudged when a work ends).
//  - ThreadTransferQueue: `threads` workers, each with a data store of its own (stores are
//    used from one thread at a time), taking works in the order given. Each file moved uses
//    [fleet] transfers connections of its own besides (s3_transfer.h).
//  - InlineTransferQueue: runs each work at once on the caller's thread with the agent's own
//    data store: for the agent's tests on virtual clocks, where a transfer is instant.
// Thread rules: submit() from the agent's thread; works run on the workers.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq::fleet {

class TransferQueue {
 public:
  using Work = std::function<void(ObjectStore& data)>;
  virtual ~TransferQueue() = default;
  virtual void submit(Work work) = 0;
};

class InlineTransferQueue final : public TransferQueue {
 public:
  explicit InlineTransferQueue(ObjectStore& data) : data_(data) {}
  void submit(Work work) override { work(data_); }

 private:
  ObjectStore& data_;
};

class ThreadTransferQueue final : public TransferQueue {
 public:
  using Opener = std::function<Result<std::unique_ptr<ObjectStore>>()>;
  // Opens a store per worker now (an error is the first that failed); `done` is called on a
  // worker after each work (the agent's nudge).
  static Result<std::unique_ptr<ThreadTransferQueue>> start(int threads, const Opener& open,
                                                            std::function<void()> done);
  ~ThreadTransferQueue() override;  // the work in hand ends; what is still queued is dropped
  void submit(Work work) override;

 private:
  ThreadTransferQueue(std::vector<std::unique_ptr<ObjectStore>> stores, std::function<void()> done);
  void loop(ObjectStore& store);

  std::vector<std::unique_ptr<ObjectStore>> stores_;
  std::function<void()> done_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Work> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace gpuq::fleet
