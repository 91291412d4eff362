// SPDX-License-Identifier: Apache-2.0
// S3's XML, read and written with pugixml: a ListObjectsV2 page, the <Error> body of a refused
// request (its <Code> goes into every error message), and the documents of a multipart upload. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "fleet/object_store.h"

namespace gpuq::fleet {

struct ListPage {
  std::vector<ObjectInfo> objects;  // keys in full, as S3 gave them (the store strips its prefix)
  bool truncated = false;           // IsTruncated: another page follows
  std::string next_token;           // NextContinuationToken, when truncated
};

// One ListObjectsV2 reply. kIoError when it is not one, or is truncated without a token.
Result<ListPage> parse_list_page(std::string_view xml);

struct S3ErrorBody {
  std::string code;     // "PreconditionFailed", "SignatureDoesNotMatch"; "" when none
  std::string message;  // S3's <Message>, cut short
};

// The <Error> of a refused request; empty fields when the body is not one.
S3ErrorBody parse_error_body(std::string_view xml);

// The UploadId of an InitiateMultipartUploadResult; kIoError when the body has none.
Result<std::string> parse_upload_id(std::string_view xml);

// One part of a multipart upload, as CompleteMultipartUpload names it.
struct UploadedPart {
  int number = 0;    // 1..10,000
  std::string etag;  // as UploadPart answered it, without quotes
};
// The body of CompleteMultipartUpload for `parts` (in part order).
std::string complete_upload_body(const std::vector<UploadedPart>& parts);

// The answer to CompleteMultipartUpload, which may be 200 with an <Error> inside (S3 answers
// before it knows): the object's ETag, or kUnavailable/kIoError with S3's code and message.
Result<std::string> parse_complete_upload(std::string_view xml);

// An ETag without its quotes: "\"abc\"" -> "abc".
std::string unquote_etag(std::string_view etag);

}  // namespace gpuq::fleet
