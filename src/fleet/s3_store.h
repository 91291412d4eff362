// SPDX-License-Identifier: Apache-2.0
// The ObjectStore on an S3-compatible bucket (AWS S3, R2, MinIO, Ceph RGW, moto), over
// libcurl (s3_http.h): objects are BUCKET/PREFIX/KEY, conditional writes are S3's
// If-None-Match: * and If-Match, a listing follows ListObjectsV2's continuation tokens.
// Transient failures (no answer, 5xx, 409 ConditionalRequestConflict, 429) are retried with
// backoff (backoff.h); a conditional write that lost its answer and then its condition is
// settled by reading the object back (object_store.h).
// Thread rules: a store (and its one connection) is used from one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq::fleet {

// A store on `bucket` under `prefix` ("" or a key: no '/' at either end), with the endpoint,
// region and credentials of `options` (which open_store has checked: credentials are set).
Result<std::unique_ptr<ObjectStore>> open_s3_store(const std::string& bucket,
                                                   const std::string& prefix,
                                                   const StoreOptions& options);

}  // namespace gpuq::fleet
