// SPDX-License-Identifier: Apache-2.0
// One S3 request over libcurl (loaded at first use: base/libcurl.h), signed by libcurl's own SigV4 (CURLOPT_AWS_SIGV4): the S3
// store's only contact with the network. It owns one CURL easy handle, reused from request to
// request so that connections are kept; it neither retries nor interprets answers (s3_store.cc
// does). libcurl's signer (7.88) signs the query and the path as given and does not add
// x-amz-content-sha256: callers pass a sorted, percent-encoded query and keys that need no
// encoding (check_key), and send() adds the header so that it is signed.
// Thread rules: one S3Http per thread at a time (a CURL handle is not shared).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq {
struct CurlApi;
}

namespace gpuq::fleet {

// A byte range of an open file: what a streamed PUT sends, or where a GET's body is written.
// The file is read or written with pread/pwrite at the range's offset, so that several
// requests may share one descriptor, each on its own range; memory stays one buffer of
// libcurl's, whatever the length.
struct FileRange {
  int fd = -1;
  int64_t offset = 0;
  int64_t length = 0;
};

struct S3Request {
  S3Request(const char* method_, std::string url_, std::vector<std::string> headers_ = {},
            std::string_view body_ = {})
      : method(method_), url(std::move(url_)), headers(std::move(headers_)), body(body_) {}

  const char* method = "GET";        // GET, HEAD, PUT, POST or DELETE
  std::string url;                   // whole, with the query sorted and encoded
  std::vector<std::string> headers;  // extra headers, "If-Match: \"abc\""
  std::string_view body;             // PUT's or POST's body (unless upload_from is set)
  // PUT only: the body is this range of a file, read as it is sent (each attempt reads it
  // again from its start).
  std::optional<FileRange> upload_from;
  // A 2xx answer's body goes into this range of a file instead of S3Answer::body; more bytes
  // than its length fail the request. Other answers (S3's XML errors) still fill `body`.
  std::optional<FileRange> download_to;
};

struct S3Answer {
  long status = 0;              // the HTTP status; 0 when no answer came
  std::string transport_error;  // why no answer came, in libcurl's words
  bool transient = false;       // no answer, and trying again may help (not a bad URL)
  bool maybe_applied = false;   // no answer, but the request may have reached the store
  std::string body;
  int64_t body_written = 0;      // bytes written to download_to
  int64_t content_length = -1;   // the Content-Length header; -1 when absent
  std::string etag;              // the ETag header, without quotes
  std::map<std::string, std::string> metadata;  // x-amz-meta-NAME headers: NAME (lowercase) → value
  int64_t date_ms = 0;           // the Date header; 0 when absent
  int64_t last_modified_ms = 0;  // the Last-Modified header; 0 when absent
};

class S3Http {
 public:
  // Signs with the region and credentials of `options` (region "" means us-east-1); each
  // request may take options.timeout_ms, connection included.
  static Result<std::unique_ptr<S3Http>> open(const StoreOptions& options);
  ~S3Http();
  S3Http(const S3Http&) = delete;
  S3Http& operator=(const S3Http&) = delete;

  S3Answer send(const S3Request& request);
  // `value` percent-encoded as S3 wants a query value (all but A-Z a-z 0-9 - . _ ~).
  std::string encode(std::string_view value);

 private:
  S3Http(const CurlApi* lib, void* handle, const StoreOptions& options);

  const CurlApi* lib_;  // libcurl, loaded at the first open() (base/libcurl.h)
  void* handle_;        // CURL*
  std::string sigv4_;
  std::string access_key_id_;
  std::string secret_access_key_;
  std::string session_token_;
  int64_t timeout_ms_;
  std::shared_ptr<std::atomic<bool>> abort_;  // StoreOptions::abort
};

// An RFC 1123 date ("Tue, 01 Dec 2026 21:45:45 GMT") in ms since the epoch; 0 when unreadable.
int64_t parse_http_date_ms(const std::string& text);

}  // namespace gpuq::fleet
