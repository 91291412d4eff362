// SPDX-License-Identifier: Apache-2.0
#include "fleet/transfer_queue.h"

namespace gpuq::fleet {

Result<std::unique_ptr<ThreadTransferQueue>> ThreadTransferQueue::start(int threads, const Opener& open,
                                                                        std::function<void()> done) {
  std::vector<std::unique_ptr<ObjectStore>> stores;
  for (int i = 0; i < std::max(threads, 1); ++i) {
    auto store = open();
    if (!store) return tl::unexpected(store.error());
    stores.push_back(std::move(*store));
  }
  return std::unique_ptr<ThreadTransferQueue>(new ThreadTransferQueue(std::move(stores), std::move(done)));
}

ThreadTransferQueue::ThreadTransferQueue(std::vector<std::unique_ptr<ObjectStore>> stores,
                                         std::function<void()> done)
    : stores_(std::move(stores)), done_(std::move(done)) {
  for (auto& store : stores_) workers_.emplace_back([this, raw = store.get()] { loop(*raw); });
}

ThreadTransferQueue::~ThreadTransferQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadTransferQueue::submit(Work work) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
  }
  wake_.notify_one();
}

void ThreadTransferQueue::loop(ObjectStore& store) {
  while (true) {
    Work work;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work(store);
    if (done_) done_();
  }
}

}  // namespace gpuq::fleet
