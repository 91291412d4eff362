// SPDX-License-Identifier: Apache-2.0
#include "runner/cleaner.h"

#include <chrono>

namespace gpuq::runner {

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Cleaner::Cleaner(std::unique_ptr<os::ProcessTable> table, CleanupLimits limits,
                 std::optional<uid_t> only_uid)
    : table_(std::move(table)), sweep_(*table_, limits, only_uid), thread_([this] { loop(); }) {}

Cleaner::~Cleaner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Cleaner::add(CleanupTarget target, Done done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.emplace_back(std::move(target), std::move(done));
  }
  wake_.notify_all();
}

void Cleaner::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!incoming_.empty()) {
      auto batch = std::move(incoming_);
      incoming_.clear();
      int64_t now = steady_now_ms();
      for (auto& [target, done] : batch) {
        int64_t key = next_key_++;
        waiting_.emplace(key, std::make_pair(target.key, std::move(done)));
        target.key = key;
        sweep_.add(std::move(target), now);
      }
    }
    auto woken = [this] { return stop_ || !incoming_.empty(); };
    if (sweep_.idle()) {
      wake_.wait(lock, woken);
      continue;
    }
    int64_t now = steady_now_ms();
    int64_t due = sweep_.next_scan_ms();
    if (now < due) {
      wake_.wait_for(lock, std::chrono::milliseconds(due - now), woken);
      continue;
    }
    lock.unlock();
    for (CleanupOutcome& outcome : sweep_.step(now)) {
      auto it = waiting_.find(outcome.key);
      if (it == waiting_.end()) continue;
      auto [key, done] = std::move(it->second);
      waiting_.erase(it);
      outcome.key = key;
      if (done) done(std::move(outcome));
    }
    lock.lock();
  }
}

}  // namespace gpuq::runner
