#include "fleet/dir_store.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/time.h"
#include "fleet/dir_files.h"

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
    Status renamed = [&]() -> Status {
      auto held = lock_.hold(options_.timeout_ms);
      if (!held) return tl::unexpected(held.error());
      if (auto st = meets(path, condition, etag); !st) return st;
      if (::rename(temp->path.c_str(), path.c_str()) != 0) return errno_error("rename to " + path);
      return ok();
    }();
    if (!renamed) {
      ::unlink(temp->path.c_str());
      return tl::unexpected(error(op, key, renamed.error()));
    }
    dir::sync_dir(dir);
    return temp->facts.etag;
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
