// SPDX-License-Identifier: Apache-2.0
#include "fleet/testing/memory_store.h"

#include <fmt/format.h>

#include <filesystem>

#include "os/process.h"

namespace gpuq::fleet::testing {

Status MemoryStore::reachable(const std::string& key) {
  if (auto valid = check_key(key); !valid) return valid;
  bool down = cut_off_ || fail_next_ > 0;
  if (fail_next_ > 0) --fail_next_;
  {
    std::lock_guard lock(bucket_->mutex);
    down = down || bucket_->unreachable;
  }
  if (down) return fail(Code::kUnavailable, fmt::format("{}: {}: cannot connect", describe(), key));
  return ok();
}

Result<std::string> MemoryStore::write(const std::string& key, std::string_view body) {
  auto& entry = bucket_->objects[key];
  entry.body = std::string(body);
  entry.etag = fmt::format("e{}", bucket_->next_etag++);
  entry.modified_ms = bucket_->now_ms;
  return entry.etag;
}

Result<Object> MemoryStore::get(const std::string& key, const std::string& if_none_match) {
  ++counts_.get;
  if (auto up = reachable(key); !up) return tl::unexpected(up.error());
  std::lock_guard lock(bucket_->mutex);
  auto it = bucket_->objects.find(key);
  if (it == bucket_->objects.end()) return fail(Code::kNotFound, fmt::format("{}: {}: no such key", describe(), key));
  Object object;
  object.etag = it->second.etag;
  object.modified_ms = it->second.modified_ms;
  object.store_now_ms = bucket_->now_ms;
  if (!if_none_match.empty() && if_none_match == it->second.etag) {
    ++counts_.not_modified;
    object.not_modified = true;
    return object;
  }
  object.body = it->second.body;
  return object;
}

Status MemoryStore::put_fault(const std::string& key) {
  if (key != fail_put_key_ || fail_puts_ == 0) return ok();
  if (fail_puts_ > 0) --fail_puts_;
  return fail(Code::kUnavailable, fmt::format("{}: {}: cannot connect", describe(), key));
}

Result<std::string> MemoryStore::put(const std::string& key, std::string_view body) {
  ++counts_.put;
  if (auto up = reachable(key); !up) return tl::unexpected(up.error());
  if (auto fault = put_fault(key); !fault) return tl::unexpected(fault.error());
  std::lock_guard lock(bucket_->mutex);
  return write(key, body);
}

Result<std::string> MemoryStore::create(const std::string& key, std::string_view body) {
  ++counts_.put;
  if (auto up = reachable(key); !up) return tl::unexpected(up.error());
  std::lock_guard lock(bucket_->mutex);
  if (bucket_->objects.count(key)) return fail(Code::kConflict, fmt::format("{}: {}: exists (412)", describe(), key));
  return write(key, body);
}

Result<std::string> MemoryStore::replace(const std::string& key, std::string_view body, const std::string& etag) {
  ++counts_.put;
  if (auto up = reachable(key); !up) return tl::unexpected(up.error());
  if (auto fault = put_fault(key); !fault) return tl::unexpected(fault.error());
  std::lock_guard lock(bucket_->mutex);
  auto it = bucket_->objects.find(key);
  if (it == bucket_->objects.end()) return fail(Code::kNotFound, fmt::format("{}: {}: no such key", describe(), key));
  if (it->second.etag != etag) return fail(Code::kConflict, fmt::format("{}: {}: changed (412)", describe(), key));
  return write(key, body);
}

Status MemoryStore::remove(const std::string& key) {
  ++counts_.remove;
  if (auto up = reachable(key); !up) return up;
  std::lock_guard lock(bucket_->mutex);
  bucket_->objects.erase(key);
  return ok();
}

Result<ObjectInfo> MemoryStore::put_file(const std::string& key, const std::string& path) {
  auto body = os::read_file(path);
  if (!body) return tl::unexpected(body.error());
  auto etag = put(key, *body);
  if (!etag) return tl::unexpected(etag.error());
  return ObjectInfo{key, *etag, static_cast<int64_t>(body->size()), 0};
}

Result<ObjectInfo> MemoryStore::get_file(const std::string& key, const std::string& target) {
  auto object = get(key);
  if (!object) return tl::unexpected(object.error());
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(target).parent_path(), ec);
  if (auto written = os::write_file_atomic(target, object->body, false); !written) {
    return tl::unexpected(written.error());
  }
  return ObjectInfo{key, object->etag, static_cast<int64_t>(object->body.size()), object->modified_ms};
}

Result<Listing> MemoryStore::list(const std::string& prefix) {
  ++counts_.list;
  if (auto up = reachable(prefix.empty() ? "x" : prefix.substr(0, prefix.size() - (prefix.back() == '/'))); !up) {
    return tl::unexpected(up.error());
  }
  std::lock_guard lock(bucket_->mutex);
  Listing listing;
  listing.store_now_ms = bucket_->now_ms;
  for (auto it = bucket_->objects.lower_bound(prefix); it != bucket_->objects.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    listing.objects.push_back({it->first, it->second.etag, static_cast<int64_t>(it->second.body.size()), it->second.modified_ms});
  }
  counts_.list += static_cast<int64_t>(listing.objects.size() / 1000);
  return listing;
}

}  // namespace gpuq::fleet::testing
