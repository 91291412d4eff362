// SPDX-License-Identifier: Apache-2.0
#include "os/file_tree.h"

#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

namespace gpuq::os {
namespace {

// How deep a tree is followed: deeper ones are left (and reported), never a stack overflow.
constexpr int kMaxDepth = 256;

// The names in the directory `dir_fd` (which this closes), "." and ".." left out.
std::vector<std::string> names_in(int dir_fd) {
  std::vector<std::string> names;
  DIR* dir = ::fdopendir(dir_fd);
  if (!dir) {
    ::close(dir_fd);
    return names;
  }
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  ::closedir(dir);
  return names;
}

int open_subdirectory(int parent_fd, const std::string& name) {
  return ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int64_t bytes_in(int parent_fd, const std::string& name, int depth) {
  struct stat st{};
  if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
  if (S_ISREG(st.st_mode)) return static_cast<int64_t>(st.st_size);
  if (!S_ISDIR(st.st_mode) || depth >= kMaxDepth) return 0;
  int dir_fd = open_subdirectory(parent_fd, name);
  if (dir_fd < 0) return 0;
  int keep = ::dup(dir_fd);  // names_in closes its fd; entries are looked at through this one
  int64_t bytes = 0;
  for (const auto& entry : names_in(dir_fd)) bytes += bytes_in(keep, entry, depth + 1);
  ::close(keep);
  return bytes;
}

// Removes `name` in `parent_fd`; the first error seen is kept in `first_error` (0: none).
void remove_in(int parent_fd, const std::string& name, int depth, int& first_error) {
  if (::unlinkat(parent_fd, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR && errno != EPERM) {
    if (!first_error) first_error = errno;
    return;
  }
  int dir_fd = depth < kMaxDepth ? open_subdirectory(parent_fd, name) : -1;
  if (dir_fd < 0) {
    if (!first_error) first_error = depth < kMaxDepth ? errno : ELOOP;
    return;
  }
  int keep = ::dup(dir_fd);
  for (const auto& entry : names_in(dir_fd)) remove_in(keep, entry, depth + 1, first_error);
  ::close(keep);
  if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT && !first_error) {
    first_error = errno;
  }
}

std::pair<std::string, std::string> parent_and_name(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  size_t slash = trimmed.rfind('/');
  if (slash == std::string::npos) return {".", trimmed};
  return {slash == 0 ? "/" : trimmed.substr(0, slash), trimmed.substr(slash + 1)};
}

}  // namespace

int64_t tree_bytes(const std::string& path) {
  auto [parent, name] = parent_and_name(path);
  int parent_fd = ::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) return 0;
  int64_t bytes = bytes_in(parent_fd, name, 0);
  ::close(parent_fd);
  return bytes;
}

Status remove_tree(const std::string& path) {
  auto [parent, name] = parent_and_name(path);
  int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) {
    if (errno == ENOENT) return ok();
    return errno_error("open " + parent);
  }
  int first_error = 0;
  remove_in(parent_fd, name, 0, first_error);
  ::close(parent_fd);
  if (first_error) return errno_error("remove " + path, first_error);
  return ok();
}

}  // namespace gpuq::os
