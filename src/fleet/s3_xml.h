// S3's XML replies, read with pugixml: a ListObjectsV2 page, and the <Error> body of a refused
// request (its <Code> goes into every error message). Pure functions; thread-safe.
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

// An ETag without its quotes: "\"abc\"" -> "abc".
std::string unquote_etag(std::string_view etag);

}  // namespace gpuq::fleet
