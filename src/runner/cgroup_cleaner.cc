// SPDX-License-Identifier: Apache-2.0
#include "runner/cgroup_cleaner.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "runner/cleaner.h"  // steady_now_ms

namespace gpuq::runner {
namespace {

void drain(int fd) {
  alignas(inotify_event) char buffer[4096];
  while (::read(fd, buffer, sizeof buffer) > 0) {
  }
}

}  // namespace

Result<std::unique_ptr<CgroupCleaner>> CgroupCleaner::start(CgroupFiles& files, CleanupLimits limits) {
  int inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd < 0) return errno_error("inotify_init1");
  int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    int err = errno;
    ::close(inotify_fd);
    return errno_error("eventfd", err);
  }
  return std::unique_ptr<CgroupCleaner>(new CgroupCleaner(files, limits, inotify_fd, wake_fd));
}

CgroupCleaner::CgroupCleaner(CgroupFiles& files, CleanupLimits limits, int inotify_fd, int wake_fd)
    : limits_(limits),
      cleanup_(files, limits),
      inotify_fd_(inotify_fd),
      wake_fd_(wake_fd),
      thread_([this] { loop(); }) {}

CgroupCleaner::~CgroupCleaner() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  ::close(inotify_fd_);
  ::close(wake_fd_);
}

void CgroupCleaner::add(int64_t key, std::string group, Done done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    incoming_.push_back({{key, std::move(group)}, std::move(done)});
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void CgroupCleaner::deliver(std::vector<CleanupOutcome> outcomes) {
  for (CleanupOutcome& outcome : outcomes) {
    auto it = waiting_.find(outcome.key);
    if (it == waiting_.end()) continue;
    Waiting w = std::move(it->second);
    waiting_.erase(it);
    // A removed group's watch is gone already (IN_IGNORED); this only frees a kept one.
    if (w.watch >= 0) ::inotify_rm_watch(inotify_fd_, w.watch);
    outcome.key = w.caller_key;
    if (w.done) w.done(std::move(outcome));
  }
}

void CgroupCleaner::take_incoming() {
  std::vector<std::pair<std::pair<int64_t, std::string>, Done>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(incoming_);
  }
  for (auto& [target, done] : batch) {
    int64_t key = next_key_++;
    const std::string& group = target.second;
    // The watch first, the first read after: a change in between still wakes the loop.
    int watch = ::inotify_add_watch(inotify_fd_, (group + "/cgroup.events").c_str(), IN_MODIFY);
    waiting_[key] = Waiting{target.first, std::move(done), watch};
    if (auto finished = cleanup_.add(key, group, steady_now_ms())) deliver({std::move(*finished)});
  }
}

void CgroupCleaner::loop() {
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    take_incoming();
    int timeout = -1;
    if (!cleanup_.idle()) {
      int64_t wait = cleanup_.next_due_ms() - steady_now_ms();
      timeout = static_cast<int>(std::clamp<int64_t>(wait, 0, 60'000));
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    int n = ::poll(fds, 2, timeout);
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      (void)!::read(wake_fd_, &count, sizeof count);
    }
    bool changed = fds[1].revents & POLLIN;
    if (changed) drain(inotify_fd_);
    int64_t now = steady_now_ms();
    if (!cleanup_.idle() && (changed || now >= cleanup_.next_due_ms())) deliver(cleanup_.check(now));
  }
}

}  // namespace gpuq::runner
