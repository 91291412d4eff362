// SPDX-License-Identifier: Apache-2.0
// Files to and from an S3 bucket in bounded memory (ObjectStore::put_file and get_file of the
// S3 store). An upload up to options.part_size is one streamed PUT; a larger one is a
// multipart upload whose parts go options.transfers at a time, each on its own connection and
// retried on its own, each carrying its Content-MD5 (S3 refuses a part whose bytes differ);
// a part that still fails aborts the upload, so no partial object ever appears, and
// docs/fleet.md names the lifecycle rule that removes uploads a dead node left open. The
// object records the file's MD5 (x-amz-meta-gpuq-md5) and the part size.
// A download asks for the object's size and ETag (HEAD), then reads byte ranges
// options.transfers at a time, each with If-Match on that ETag (an object replaced meanwhile
// fails the download rather than mixing two), into a PartialFile; the size and, for objects
// that record one, the MD5 are checked before the file is renamed into place.
// Thread rules: the calls use `http` (the store's connection) from the calling thread and open
// a connection per worker thread for the parts; they return when every worker has ended.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "fleet/object_store.h"
#include "fleet/s3_http.h"

namespace gpuq::fleet {

// The object a transfer moves.
struct S3Target {
  std::string store;  // "s3://bucket/prefix", for messages
  std::string key;    // relative to the store's prefix, for messages and the result
  std::string url;    // the object's URL, without a query
};

// The part size for a `size`-byte upload when `wanted` is asked for: `wanted` within S3's
// bounds (5 MiB .. 5 GiB), raised (to whole MiB) when the file would need more than 10,000
// parts.
int64_t part_size_for(int64_t size, int64_t wanted);

Result<ObjectInfo> s3_put_file(S3Http& http, const StoreOptions& options, const S3Target& target,
                               const std::string& path);
Result<ObjectInfo> s3_get_file(S3Http& http, const StoreOptions& options, const S3Target& target,
                               const std::string& local);

// Metadata that gpuq's uploads carry (x-amz-meta-NAME).
inline constexpr const char* kMetaMd5 = "gpuq-md5";
inline constexpr const char* kMetaPartSize = "gpuq-part-size";

}  // namespace gpuq::fleet
