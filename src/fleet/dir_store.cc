// SPDX-License-Identifier: Apache-2.0
#include "fleet/dir_store.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/time.h"
#include "fleet/dir_files.h"
#include "fleet/partial_file.h"

namespace gpuq::fleet {
namespace {

// What a write asks of the object it replaces.
enum class Condition { kNone, kAbsent, kSameEtag };

class DirStore final : public ObjectStore {
 public:
  DirStore(std::string root, StoreOptions options)
      : root_(std::move(root)), options_(std::move(options)), lock_(root_) {}

  std::string describe() const override { return "dir://" + root_; }

  Result<Object> get(const std::string& key, const std::string& if_none_match) override {
    if (auto st = check(key); !st) return tl::unexpected(st.error());
    auto content = dir::read_object(path_of(key), if_none_match);
    if (!content) return tl::unexpected(error("get", key, content.error()));
    Object object;
    object.etag = content->facts.etag;
    object.not_modified = !if_none_match.empty() && object.etag == if_none_match;
    object.body = std::move(content->body);
    object.modified_ms = content->facts.modified_ms;
    object.store_now_ms = wall_now_ms();
    return object;
  }

  Result<std::string> put(const std::string& key, std::string_view body) override {
    return write("put", key, body, Condition::kNone, "");
  }

  Result<std::string> create(const std::string& key, std::string_view body) override {
    return write("create", key, body, Condition::kAbsent, "");
  }

  Result<std::string> replace(const std::string& key, std::string_view body,
                              const std::string& etag) override {
    return write("replace", key, body, Condition::kSameEtag, etag);
  }

  Status remove(const std::string& key) override {
    if (auto st = check(key); !st) return st;
    const std::string path = path_of(key);
    {
      auto held = lock_.hold(options_.timeout_ms);
      if (!held) return tl::unexpected(error("remove", key, held.error()));
      if (::unlink(path.c_str()) != 0 && errno != ENOENT && errno != ENOTDIR) {
        return tl::unexpected(error("remove", key, errno_error("remove " + path).value()));
      }
      // Under the lock, so that no writer's new folder goes with them.
      dir::remove_empty_dirs(root_, parent_of(path));
    }
    dir::sync_dir(parent_of(path));
    return ok();
  }

  Result<ObjectInfo> put_file(const std::string& key, const std::string& path) override {
    if (auto st = check(key); !st) return tl::unexpected(st.error());
    const int source = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (source < 0) {
      return fail(errno == ENOENT ? Code::kNotFound : Code::kIoError,
                  fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    }
    const std::string target = path_of(key);
    auto temp = dir::copy_to_temp(parent_of(target), source, path);
    ::close(source);
    if (!temp) return tl::unexpected(error("put", key, temp.error()));
    if (auto renamed = rename_into_place(*temp, target); !renamed) {
      return tl::unexpected(error("put", key, renamed.error()));
    }
    return ObjectInfo{key, temp->facts.etag, temp->facts.size, temp->facts.modified_ms};
  }

  Result<ObjectInfo> get_file(const std::string& key, const std::string& target) override {
    if (auto st = check(key); !st) return tl::unexpected(st.error());
    const std::string path = path_of(key);
    const int source = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (source < 0) {
      const Code code = errno == ENOENT || errno == ENOTDIR ? Code::kNotFound : Code::kIoError;
      return fail(code, fmt::format("{}: get {}: {}", describe(), key, std::strerror(errno)));
    }
    struct CloseSource {
      int fd;
      ~CloseSource() { ::close(fd); }
    } closer{source};
    auto facts = dir::stat_object(path);
    if (!facts) return tl::unexpected(error("get", key, facts.error()));
    auto partial = PartialFile::open(target, 0);
    if (!partial) return tl::unexpected(error("get", key, partial.error()));
    auto copied = dir::copy_stream(source, partial->fd(), path, partial->path());
    if (!copied) return tl::unexpected(error("get", key, copied.error()));
    if (auto done = partial->commit(); !done) return tl::unexpected(error("get", key, done.error()));
    return ObjectInfo{key, facts->etag, *copied, facts->modified_ms};
  }

  Result<Listing> list(const std::string& prefix) override {
    if (auto st = check_list_prefix(prefix); !st) return tl::unexpected(st.error());
    Listing listing;
    listing.store_now_ms = wall_now_ms();
    std::vector<std::string> keys;
    if (auto st = dir::walk(root_, prefix, keys); !st) {
      return tl::unexpected(error("list", prefix, st.error()));
    }
    std::sort(keys.begin(), keys.end());
    for (std::string& key : keys) {
      // Temporary files ('#') and the lock file are not objects.
      if (key == kDirStoreLockName || !check_key(key)) continue;
      auto facts = dir::stat_object(path_of(key));
      if (!facts) {
        if (facts.error().code == Code::kNotFound) continue;  // removed as we listed
        return tl::unexpected(error("list", prefix, facts.error()));
      }
      listing.objects.push_back({std::move(key), facts->etag, facts->size, facts->modified_ms});
    }
    return listing;
  }

 private:
  Status check(const std::string& key) const {
    if (auto st = check_key(key); !st) return st;
    if (key == kDirStoreLockName) {
      return fail(Code::kInvalidArgument,
                  fmt::format("key \"{}\" is refused: it is the lock file of {}", key, describe()));
    }
    return ok();
  }

  std::string path_of(const std::string& key) const { return root_ + "/" + key; }

  static std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

  Error error(std::string_view op, std::string_view key, const Error& cause) const {
    return {cause.code, fmt::format("{}: {} {}: {}", describe(), op, key, cause.message)};
  }

  // Whether the object at `path` meets `condition`, checked under the lock.
  Status meets(const std::string& path, Condition condition, const std::string& etag) const {
    if (condition == Condition::kNone) return ok();
    if (condition == Condition::kAbsent) {
      struct stat st {};
      if (::lstat(path.c_str(), &st) == 0) return fail(Code::kConflict, "it exists");
      if (errno == ENOENT) return ok();
      return errno_error("stat " + path);
    }
    auto facts = dir::stat_object(path);
    if (!facts) return tl::unexpected(facts.error());
    if (facts->etag != etag) {
      return fail(Code::kConflict,
                  fmt::format("its ETag is {}, not {}", facts->etag, clip_for_message(etag)));
    }
    return ok();
  }

  Result<std::string> write(std::string_view op, const std::string& key, std::string_view body,
                            Condition condition, const std::string& etag) {
    if (auto st = check(key); !st) return tl::unexpected(st.error());
    const std::string path = path_of(key);
    const std::string dir = parent_of(path);
    // Written before taking the lock, so that it is held only to check and rename.
    auto temp = dir::write_temp(dir, body);
    if (!temp) return tl::unexpected(error(op, key, temp.error()));
    if (auto renamed = rename_into_place(*temp, path, condition, etag); !renamed) {
      return tl::unexpected(error(op, key, renamed.error()));
    }
    return temp->facts.etag;
  }

  // Under the lock: `condition` checked, `temp` renamed to `path`; then the folder synced. The
  // temporary file is removed when it is not renamed.
  Status rename_into_place(const dir::TempFile& temp, const std::string& path,
                           Condition condition = Condition::kNone, const std::string& etag = "") {
    Status renamed = [&]() -> Status {
      auto held = lock_.hold(options_.timeout_ms);
      if (!held) return tl::unexpected(held.error());
      if (auto st = meets(path, condition, etag); !st) return st;
      if (::rename(temp.path.c_str(), path.c_str()) != 0) return errno_error("rename to " + path);
      return ok();
    }();
    if (!renamed) {
      ::unlink(temp.path.c_str());
      return renamed;
    }
    dir::sync_dir(parent_of(path));
    return ok();
  }

  std::string root_;
  StoreOptions options_;
  dir::StoreLock lock_;
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> open_dir_store(const std::string& root,
                                                    const StoreOptions& options) {
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return fail(Code::kNotFound,
                  fmt::format("dir://{}: no such directory (is the share mounted? make the "
                              "directory first if it is a new store)",
                              root));
    }
    return errno_error("dir://" + root + ": stat");
  }
  if (!S_ISDIR(st.st_mode)) {
    return fail(Code::kInvalidArgument, fmt::format("dir://{}: not a directory", root));
  }
  return std::unique_ptr<ObjectStore>(std::make_unique<DirStore>(root, options));
}

}  // namespace gpuq::fleet
