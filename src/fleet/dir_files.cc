// SPDX-License-Identifier: Apache-2.0
#include "fleet/dir_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <vector>

#include "base/random.h"
#include "fleet/backoff.h"
#include "fleet/dir_store.h"
#include "os/process.h"

namespace gpuq::fleet::dir {
namespace {

constexpr int kStaleRetries = 3;   // NFS: ESTALE when the file was replaced under our lookup
constexpr int kCreateRetries = 3;  // a folder removed under us, a name already taken

uint64_t random_bits() {
  thread_local std::mt19937_64 random(random_seed());
  return random();
}

FileFacts facts_of(const struct stat& st) {
  const int64_t mtime_ns =
      static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return {fmt::format("{:x}-{:x}-{:x}", mtime_ns, st.st_ino, st.st_size),
          static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec) * 1000};
}

Error not_found(const std::string& path) { return {Code::kNotFound, "no object at " + path}; }

bool absent(int err) { return err == ENOENT || err == ENOTDIR; }

// Closes `fd` when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

Status write_all(int fd, std::string_view body, const std::string& path) {
  size_t done = 0;
  while (done < body.size()) {
    const ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error("write " + path);
    done += static_cast<size_t>(n);
  }
  return ok();
}

// A new file in `dir`. The name holds the pid, since forked processes draw the same random
// numbers (a generator's state is copied), and random bits, since hosts share the directory.
Result<int> create_temp(const std::string& dir, std::string& path) {
  for (int attempt = 0;; ++attempt) {
    path = fmt::format("{}/#tmp-{}-{:016x}", dir, ::getpid(), random_bits());
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (attempt == kCreateRetries || (errno != ENOENT && errno != EEXIST)) {
      return errno_error("create " + path);
    }
    // A remove may take an emptied folder away between our mkdir and open: make it again.
    if (errno == ENOENT) {
      if (auto st = os::make_dirs(dir, 0777); !st) return tl::unexpected(st.error());
    }
  }
}

std::shared_ptr<std::timed_mutex> mutex_for(const std::string& root) {
  static std::mutex guard;
  static std::map<std::string, std::weak_ptr<std::timed_mutex>> by_root;
  std::lock_guard lock(guard);
  std::shared_ptr<std::timed_mutex> mutex = by_root[root].lock();
  if (!mutex) {
    mutex = std::make_shared<std::timed_mutex>();
    by_root[root] = mutex;
  }
  return mutex;
}

bool starts_with(std::string_view text, std::string_view start) {
  return text.substr(0, start.size()) == start;
}

Status walk_from(const std::string& root, const std::string& rel, std::string_view prefix,
                 std::vector<std::string>& out) {
  const std::string path = rel.empty() ? root : root + "/" + rel;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    if (absent(errno)) return ok();  // removed while we walked
    return errno_error("open folder " + path);
  }
  std::vector<std::pair<std::string, bool>> entries;  // name, is a folder
  errno = 0;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    unsigned char type = entry->d_type;
    if (type == DT_UNKNOWN) {
      struct stat st {};
      if (::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    if (type == DT_DIR || type == DT_REG) entries.emplace_back(name, type == DT_DIR);
  }
  const int read_error = errno;
  ::closedir(dir);
  if (read_error != 0) return errno_error("read folder " + path, read_error);
  for (const auto& [name, is_folder] : entries) {
    const std::string child = rel.empty() ? name : rel + "/" + name;
    if (!is_folder) {
      if (starts_with(child, prefix)) out.push_back(child);
      continue;
    }
    const std::string as_folder = child + "/";
    if (!starts_with(as_folder, prefix) && !starts_with(prefix, as_folder)) continue;
    if (auto st = walk_from(root, child, prefix, out); !st) return st;
  }
  return ok();
}

}  // namespace

Result<FileFacts> stat_object(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (absent(errno)) return tl::unexpected(not_found(path));
    return errno_error("stat " + path);
  }
  if (!S_ISREG(st.st_mode)) return tl::unexpected(not_found(path));
  return facts_of(st);
}

Result<FileContent> read_object(const std::string& path, const std::string& skip_body_if_etag) {
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) break;
    if (absent(errno)) return tl::unexpected(not_found(path));
    if (errno != ESTALE || attempt == kStaleRetries) return errno_error("open " + path);
  }
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_error("stat " + path);
  if (!S_ISREG(st.st_mode)) return tl::unexpected(not_found(path));
  FileContent content{"", facts_of(st)};
  if (!skip_body_if_etag.empty() && content.facts.etag == skip_body_if_etag) return content;
  content.body.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (true) {
    if (done == content.body.size()) content.body.resize(done + 4096);  // it grew: read on
    const ssize_t n = ::read(fd, content.body.data() + done, content.body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error("read " + path);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  content.body.resize(done);
  return content;
}

namespace {

// Makes a temporary file in `dir`, fills it with `fill`, then sets its time and fsyncs it.
Result<TempFile> make_temp(const std::string& dir, const std::function<Status(int, const std::string&)>& fill) {
  TempFile temp;
  auto fd = create_temp(dir, temp.path);
  if (!fd) return tl::unexpected(fd.error());
  FdCloser closer{*fd};
  auto give_up = [&](Error error) -> Result<TempFile> {
    ::unlink(temp.path.c_str());
    return tl::unexpected(std::move(error));
  };
  if (auto st = fill(*fd, temp.path); !st) return give_up(st.error());
  // Now, with random nanoseconds: two writes in one tick of the kernel's coarse clock, to a
  // reused inode, of one size, still differ.
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  struct timespec times[2] = {{0, UTIME_OMIT}, {}};
  times[1].tv_sec =
      static_cast<time_t>(std::chrono::duration_cast<std::chrono::seconds>(now).count());
  times[1].tv_nsec = static_cast<long>(random_bits() % 1'000'000'000);
  if (::futimens(*fd, times) != 0)
    return give_up(errno_error("set the time of " + temp.path).value());
  if (::fsync(*fd) != 0) return give_up(errno_error("fsync " + temp.path).value());
  struct stat st {};
  if (::fstat(*fd, &st) != 0) return give_up(errno_error("stat " + temp.path).value());
  temp.facts = facts_of(st);
  closer.fd = -1;
  if (::close(*fd) != 0) return give_up(errno_error("close " + temp.path).value());
  return temp;
}

}  // namespace

Result<TempFile> write_temp(const std::string& dir, std::string_view body) {
  return make_temp(dir, [&](int fd, const std::string& path) { return write_all(fd, body, path); });
}

Result<TempFile> copy_to_temp(const std::string& dir, int source, const std::string& source_path) {
  return make_temp(dir, [&](int fd, const std::string& path) -> Status {
    auto copied = copy_stream(source, fd, source_path, path);
    if (!copied) return tl::unexpected(copied.error());
    return ok();
  });
}

Result<int64_t> copy_stream(int source, int target, const std::string& source_path,
                            const std::string& target_path) {
  std::vector<char> buffer(1 << 20);
  int64_t total = 0;
  while (true) {
    const ssize_t got = ::pread(source, buffer.data(), buffer.size(), total);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno_error("read " + source_path);
    if (got == 0) return total;
    if (auto st = write_all(target, std::string_view(buffer.data(), static_cast<size_t>(got)), target_path); !st) {
      return tl::unexpected(st.error());
    }
    total += got;
  }
}

void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void remove_empty_dirs(const std::string& root, std::string dir) {
  while (dir.size() > root.size() && starts_with(dir, root + "/")) {
    if (::rmdir(dir.c_str()) != 0) return;  // not empty (or gone): stop
    dir.erase(dir.rfind('/'));
  }
}

Status walk(const std::string& root, std::string_view prefix, std::vector<std::string>& out) {
  return walk_from(root, "", prefix, out);
}

StoreLock::StoreLock(std::string root)
    : root_(std::move(root)),
      path_(root_ + "/" + kDirStoreLockName),
      in_process_(mutex_for(root_)) {}

StoreLock::~StoreLock() {
  if (fd_ >= 0) ::close(fd_);
}

StoreLock::Held::Held(std::unique_lock<std::timed_mutex> in_process, int fd)
    : in_process_(std::move(in_process)), fd_(fd) {}

StoreLock::Held::Held(Held&& other) noexcept
    : in_process_(std::move(other.in_process_)), fd_(other.fd_) {
  other.fd_ = -1;
}

StoreLock::Held::~Held() {
  if (fd_ >= 0) ::flock(fd_, LOCK_UN);
}

Result<StoreLock::Held> StoreLock::hold(int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto too_long = [&] {
    return fail(
        Code::kUnavailable,
        fmt::format("another writer held the lock {} for longer than {} ms", path_, timeout_ms));
  };
  std::unique_lock in_process(*in_process_, std::defer_lock);
  if (!in_process.try_lock_until(deadline)) return too_long();
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) return errno_error("open the lock " + path_);
  }
  Backoff backoff(1, 50);  // locks are held for a rename: look again soon
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOLCK) {
      return fail(Code::kUnavailable,
                  fmt::format("{} cannot be locked (ENOLCK): on NFS, is the lock service "
                              "(rpc.statd, lockd) running on client and server?",
                              path_));
    }
    if (errno != EWOULDBLOCK) return errno_error("lock " + path_);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return too_long();
    backoff.wait(left.count());
  }
  return Held(std::move(in_process), fd_);
}

}  // namespace gpuq::fleet::dir
