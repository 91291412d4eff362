// SPDX-License-Identifier: Apache-2.0
#include "daemon/file_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

namespace gpuq::daemon {

namespace asio = boost::asio;

struct FileWatcher::State : std::enable_shared_from_this<FileWatcher::State> {
  struct Entry {
    int wd = -1;
    std::string name;  // the file's name inside the watched directory
    std::function<void()> changed;
  };

  explicit State(asio::io_context& io) : stream(io) {}

  void read_more() {
    auto self = shared_from_this();
    stream.async_read_some(asio::buffer(buffer), [self](const boost::system::error_code& ec, size_t n) {
      if (ec) return;  // closed: the watcher is gone
      self->dispatch(n);
      self->read_more();
    });
  }

  void dispatch(size_t bytes) {
    // Callbacks are collected first: one may drop its own watch, or another's.
    std::vector<uint64_t> due;
    for (size_t at = 0; at + sizeof(inotify_event) <= bytes;) {
      inotify_event event;
      std::memcpy(&event, buffer.data() + at, sizeof(event));
      std::string name;
      if (event.len > 0) name = std::string(buffer.data() + at + sizeof(event));  // NUL-padded
      at += sizeof(inotify_event) + event.len;
      for (const auto& [id, entry] : entries) {
        if (entry.wd == event.wd && entry.name == name) due.push_back(id);
      }
    }
    for (uint64_t id : due) {
      auto it = entries.find(id);
      if (it == entries.end()) continue;
      auto changed = it->second.changed;  // a copy: the call may erase the entry
      changed();
    }
  }

  void remove(uint64_t id) {
    auto it = entries.find(id);
    if (it == entries.end()) return;
    int wd = it->second.wd;
    entries.erase(it);
    for (const auto& [other, entry] : entries) {
      if (entry.wd == wd) return;  // the directory is still watched for another file
    }
    ::inotify_rm_watch(stream.native_handle(), wd);
  }

  asio::posix::stream_descriptor stream;
  std::array<char, 16384> buffer{};
  std::map<uint64_t, Entry> entries;
  uint64_t next_id = 1;
};

namespace {

class InotifyWatch : public FileWatch {
 public:
  InotifyWatch(std::weak_ptr<FileWatcher::State> state, uint64_t id) : state_(std::move(state)), id_(id) {}
  ~InotifyWatch() override {
    if (auto state = state_.lock()) state->remove(id_);
  }

 private:
  std::weak_ptr<FileWatcher::State> state_;
  uint64_t id_;
};

}  // namespace

FileWatcher::FileWatcher(asio::io_context& actor) : state_(std::make_shared<State>(actor)) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "gpuq daemon: inotify_init1: %s; steps are recorded when their run ends\n",
                 std::strerror(errno));
    return;
  }
  state_->stream.assign(fd);
  state_->read_more();
}

FileWatcher::~FileWatcher() {
  boost::system::error_code ignored;
  state_->entries.clear();
  state_->stream.close(ignored);
}

Result<std::unique_ptr<FileWatch>> FileWatcher::watch(const std::string& path, std::function<void()> changed) {
  if (!state_->stream.is_open()) return fail(Code::kUnavailable, "inotify is not available");
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  int wd = ::inotify_add_watch(state_->stream.native_handle(), dir.c_str(),
                               IN_CLOSE_WRITE | IN_MOVED_TO | IN_ONLYDIR);
  if (wd < 0) {
    return fail(Code::kUnavailable, fmt::format("watching {}: {}", dir, std::strerror(errno)));
  }
  uint64_t id = state_->next_id++;
  state_->entries[id] = State::Entry{wd, name, std::move(changed)};
  return std::unique_ptr<FileWatch>(std::make_unique<InotifyWatch>(state_, id));
}

}  // namespace gpuq::daemon
