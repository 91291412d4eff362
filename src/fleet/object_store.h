// SPDX-License-Identifier: Apache-2.0
// The fleet's one view of shared storage: an S3-compatible bucket (s3_store.h) or a shared
// directory (dir_store.h, for NFS), behind the same small set of operations with the same
// meaning, so the agent, the claims and `gpuq fleet` never know which one they talk to.
//
// Keys are relative to the store's prefix (s3://BUCKET/PREFIX or dir:///PATH) and keep to a
// safe alphabet (check_key): libcurl neither encodes a key's path nor sorts a query, so a key
// that needs encoding is refused before any request is sent.
//
// Every operation has a timeout and retries transient failures (connection errors, 5xx, 409
// ConditionalRequestConflict) with backoff; what still fails is an Error whose message names
// the store, the key and the HTTP status. Error codes say what happened:
//   kNotFound           the key does not exist (get; replace of a missing key)
//   kConflict           a condition lost: create found the key, replace found another ETag
//   kUnavailable        the store could not be reached or kept failing (transient)
//   kInvalidArgument    a refused key (check_key)
//   kIoError            the store refused (403, 400, ...): the message says why
// A conditional write whose answer was lost (a timeout after the request was sent) and whose
// retry then loses its condition is settled by reading the object back: when it holds exactly
// the body written, the write succeeded. Bodies written conditionally therefore carry a token
// of their writer (claims do), so that no other writer's body can be mistaken for one's own.
//
// Thread rules: an ObjectStore may be used from one thread at a time; open one per thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace gpuq::fleet {

struct Object {
  std::string body;
  std::string etag;            // as the store gave it, quotes removed
  int64_t modified_ms = 0;     // Last-Modified, by the store's clock
  int64_t store_now_ms = 0;    // the store's clock when it answered (Date); 0 when unknown
  bool not_modified = false;   // get(key, etag) and the object still has that ETag: no body
};

struct ObjectInfo {
  std::string key;             // relative to the store's prefix
  std::string etag;
  int64_t size = 0;
  int64_t modified_ms = 0;
};

struct Listing {
  std::vector<ObjectInfo> objects;  // every key under the prefix, in key order (all pages)
  int64_t store_now_ms = 0;         // the store's clock when the first page came
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // "s3://bucket/prefix" or "dir:///path", for messages.
  virtual std::string describe() const = 0;

  // The object. With `if_none_match` set and the object's ETag equal to it, returns
  // not_modified (an S3 conditional GET answered 304: no body travels).
  virtual Result<Object> get(const std::string& key, const std::string& if_none_match = "") = 0;
  // Writes `body` whatever is there; returns the new ETag.
  virtual Result<std::string> put(const std::string& key, std::string_view body) = 0;
  // Writes `body` only if the key does not exist (If-None-Match: *); kConflict if it does.
  virtual Result<std::string> create(const std::string& key, std::string_view body) = 0;
  // Writes `body` only if the object still has ETag `etag` (If-Match); kConflict if it has
  // another, kNotFound if it is gone.
  virtual Result<std::string> replace(const std::string& key, std::string_view body,
                                      const std::string& etag) = 0;
  // Deletes the key; a missing key is not an error.
  virtual Status remove(const std::string& key) = 0;
  // Every key that begins with `prefix`, following the store's pages (S3 gives 1,000 a page).
  virtual Result<Listing> list(const std::string& prefix) = 0;

  // Files of any size, moved in bounded memory (a buffer per transfer lane, never the object):
  // put_file streams the file at `path` to `key` whatever is there and returns the object as
  // stored (ETag, size); get_file streams `key` into the file `target` (its folders made) and
  // returns the object it read. A download is written beside the target under a hidden
  // partial name, checked (its size; its MD5 when the uploader recorded one), fsync'd and only
  // then renamed into place: a failed or interrupted get_file leaves `target` as it was.
  // S3 (s3_transfer.h): one PUT up to options.part_size, a multipart upload above it, parts
  // and ranges sent options.transfers at a time, each retried on its own, every part carrying
  // its Content-MD5; an upload that fails is aborted. dir://: a streamed copy, fsync'd and
  // renamed (dir_store.h).
  virtual Result<ObjectInfo> put_file(const std::string& key, const std::string& path) = 0;
  virtual Result<ObjectInfo> get_file(const std::string& key, const std::string& target) = 0;
};

// Whether `key` may be used: 1..900 bytes of [A-Za-z0-9._-/], no leading or trailing '/', no
// empty, "." or ".." segment. The error names the key and the alphabet.
Status check_key(std::string_view key);

// Whether `prefix` may be given to list(): "" or up to 900 bytes of check_key's alphabet (it
// may end in '/' or stop inside a segment: "claims/", "claims/jo").
Status check_list_prefix(std::string_view prefix);

// S3's bounds on multipart uploads: parts of 5 MiB to 5 GiB (the last may be smaller), at most
// 10,000 of them, objects up to 5 TiB.
inline constexpr int64_t kMinPartSize = int64_t{5} << 20;
inline constexpr int64_t kMaxPartSize = int64_t{5} << 30;
inline constexpr int64_t kMaxParts = 10'000;
inline constexpr int64_t kMaxObjectSize = int64_t{5} << 40;
inline constexpr int64_t kDefaultPartSize = int64_t{64} << 20;

// Settings shared by every store: how long one call may take and how often it is retried.
struct StoreOptions {
  int64_t timeout_ms = 20'000;     // one request, connection included
  int retries = 4;                 // further attempts after a transient failure
  int64_t backoff_ms = 200;        // first wait; doubles each retry (with jitter), at most 5 s
  // S3 only (docs/fleet.md, "Credentials"): from [fleet] in config.toml, else AWS_* variables.
  std::string endpoint;            // AWS_ENDPOINT_URL; empty: https://s3.REGION.amazonaws.com
  std::string region;              // AWS_REGION (or AWS_DEFAULT_REGION); empty: us-east-1
  std::string access_key_id;       // AWS_ACCESS_KEY_ID
  std::string secret_access_key;   // AWS_SECRET_ACCESS_KEY
  std::string session_token;       // AWS_SESSION_TOKEN
  bool path_style = true;          // https://ENDPOINT/BUCKET/KEY (MinIO, moto, most others)
  // Files (put_file, get_file): [fleet] part_size and transfers.
  int64_t part_size = kDefaultPartSize;  // a multipart upload above this; its parts this big
  int transfers = 4;                     // parts or ranges in flight at once, per file
  // Set (by the daemon, as it stops) to end S3 requests in flight at once: they then fail and
  // are not retried. Null: never.
  std::shared_ptr<std::atomic<bool>> abort;
};

// Opens "s3://BUCKET/PREFIX" or "dir:///PATH" (PREFIX and the path's directory may be deep;
// a trailing '/' is ignored). An unknown scheme, a bucket name S3 would refuse or, for s3://,
// missing credentials are errors that say which variable or config key to set.
Result<std::unique_ptr<ObjectStore>> open_store(const std::string& url, const StoreOptions& options);

// What a store URL names: a bucket and a prefix (s3://), or a directory (dir://).
struct StoreUrl {
  enum class Kind { kS3, kDir };
  Kind kind = Kind::kS3;
  std::string bucket;  // s3: the bucket
  std::string prefix;  // s3: the key prefix, without leading or trailing '/'; may be ""
  std::string path;    // dir: the absolute directory, without a trailing '/'
};

// Parses a store URL as open_store does, without touching the store.
Result<StoreUrl> parse_store_url(const std::string& url);

// Fills the S3 settings that `options` leaves empty from the standard AWS_* variables.
StoreOptions with_aws_environment(StoreOptions options);

// Tests the store's conditional writes under `scratch_key` (created, then removed): a second
// create must lose, a replace with a stale ETag must lose, one with the current ETag must win.
// A store that ignores the conditions (some S3-compatible servers do, without an error) cannot
// hold a fleet: the error says which condition it ignored.
Status verify_conditional_writes(ObjectStore& store, const std::string& scratch_key);

}  // namespace gpuq::fleet
