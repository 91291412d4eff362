// SPDX-License-Identifier: Apache-2.0
// One S3 request with the store's retries, and the error that names what failed: shared by the
// S3 store's small requests (s3_store.cc) and its streamed transfers (s3_transfer.cc).
// Transient failures (no answer, 5xx, 409 ConditionalRequestConflict, 429) are retried with
// backoff (backoff.h) up to StoreOptions::retries times. Thread rules: those of the S3Http.
#pragma once

#include <string_view>

#include "base/status.h"
#include "fleet/object_store.h"
#include "fleet/s3_http.h"

namespace gpuq::fleet {

// What came of a request after its retries.
struct S3Outcome {
  S3Answer answer;
  int attempts = 0;
  // An attempt before the last failed in a way that may have left its write done: a later
  // 412 may then be the store seeing our own write.
  bool ambiguous = false;
};

// Whether trying `answer`'s request again may help.
bool worth_retrying(const S3Answer& answer);

// Sends `request`, again after each transient failure, at most 1 + options.retries times.
S3Outcome call_with_retries(S3Http& http, const S3Request& request, const StoreOptions& options);

// The error of a failed outcome: "STORE: OP KEY: HTTP 403 (AccessDenied): ... (after 3
// attempts)", its code from the status (object_store.h).
Error s3_failure(std::string_view store, std::string_view op, std::string_view key,
                 const S3Outcome& outcome);

}  // namespace gpuq::fleet
