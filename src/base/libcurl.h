// SPDX-License-Identifier: Apache-2.0
// libcurl, loaded with dlopen("libcurl.so.4") the first time a caller needs it: webhooks
// (daemon/hook_delivery.cc), the S3 store (fleet/s3_http.cc) and `gpuq --url`
// (cli/curl_transport.cc). The `gpuq` binary does not link libcurl, so the commands that only
// talk to the local daemon do not pay for loading it and the thirty libraries it pulls in.
// Callers compile against <curl/curl.h> for its types and constants, and call libcurl through
// the table below, which holds only the functions gpuq uses (each typed as curl.h declares it).
// The library stays loaded for the life of the process. Thread-safe: the first call loads it
// and runs curl_global_init once; every later call returns the same table.
#pragma once

#include <curl/curl.h>

#include "base/status.h"

namespace gpuq {

struct CurlApi {
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_reset) easy_reset;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_easy_nextheader) easy_nextheader;
  decltype(&curl_easy_escape) easy_escape;
  decltype(&curl_free) free;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
  decltype(&curl_getdate) getdate;
};

// The loaded library, or Code::kUnavailable saying that libcurl.so.4 is missing and which
// Debian package provides it (or which function it lacks). The answer of the first call is
// kept: a library installed later is not picked up by a running process.
Result<const CurlApi*> curl_api();

// What curl_api() does once: loads `soname`, resolves the table, runs curl_global_init. Apart so
// that a test can name a library that is not there.
Result<CurlApi> load_curl(const char* soname);

}  // namespace gpuq
