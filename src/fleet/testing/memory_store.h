// SPDX-License-Identifier: Apache-2.0
// An ObjectStore in memory, for unit tests of the fleet's logic (claims, the agent, the
// client commands): the same conditional semantics as the real stores, a counter of requests
// by kind (to check what a poll costs), and faults on demand (every call fails as if the store
// were unreachable, or the next N calls do). Several MemoryStore objects may share one Bucket,
// as nodes share a real one. The real stores are tested against the contract in tests/fleet.
// Thread-safe: the Bucket has a mutex; a MemoryStore may be used from any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "fleet/object_store.h"

namespace gpuq::fleet::testing {

// The shared contents: key → (body, etag, modified).
struct Bucket {
  struct Entry {
    std::string body;
    std::string etag;
    int64_t modified_ms = 0;
  };
  std::mutex mutex;
  std::map<std::string, Entry> objects;
  int64_t next_etag = 1;
  int64_t now_ms = 1'000'000;  // the store's clock; tests move it
  bool unreachable = false;    // every call of every store fails with kUnavailable
};

struct RequestCounts {
  int64_t get = 0;             // GETs, conditional ones included
  int64_t not_modified = 0;    // of which answered 304
  int64_t put = 0;             // PUTs, conditional ones included
  int64_t list = 0;            // list pages (1,000 keys each)
  int64_t remove = 0;
};

class MemoryStore : public ObjectStore {
 public:
  explicit MemoryStore(std::shared_ptr<Bucket> bucket) : bucket_(std::move(bucket)) {}

  std::string describe() const override { return "memory://test"; }
  Result<Object> get(const std::string& key, const std::string& if_none_match = "") override;
  Result<std::string> put(const std::string& key, std::string_view body) override;
  Result<std::string> create(const std::string& key, std::string_view body) override;
  Result<std::string> replace(const std::string& key, std::string_view body,
                              const std::string& etag) override;
  Status remove(const std::string& key) override;
  Result<Listing> list(const std::string& prefix) override;
  // Files are read and written whole here (a fake for logic tests; the real stores stream).
  Result<ObjectInfo> put_file(const std::string& key, const std::string& path) override;
  Result<ObjectInfo> get_file(const std::string& key, const std::string& target) override;

  // This store's calls fail (kUnavailable) while set: a node cut off from the bucket.
  void set_cut_off(bool cut) { cut_off_ = cut; }
  // The next `n` calls of this store fail with kUnavailable.
  void fail_next(int n) { fail_next_ = n; }
  // The next `n` puts of `key` (conditional replaces too) fail with kUnavailable (-1: every
  // one); other calls go through.
  void fail_puts_of(std::string key, int n) {
    fail_put_key_ = std::move(key);
    fail_puts_ = n;
  }
  const RequestCounts& counts() const { return counts_; }
  void reset_counts() { counts_ = {}; }

 private:
  Status reachable(const std::string& key);
  Result<std::string> write(const std::string& key, std::string_view body);  // mutex held
  Status put_fault(const std::string& key);  // the fault fail_puts_of asked for, if any

  std::shared_ptr<Bucket> bucket_;
  bool cut_off_ = false;
  int fail_next_ = 0;
  std::string fail_put_key_;
  int fail_puts_ = 0;
  RequestCounts counts_;
};

}  // namespace gpuq::fleet::testing
