// SPDX-License-Identifier: Apache-2.0
#include "base/status.h"

#include <cstring>
#include <string>

namespace gpuq {

std::string_view code_name(Code code) {
  switch (code) {
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kNotFound: return "not_found";
    case Code::kConflict: return "conflict";
    case Code::kFailedPrecondition: return "failed_precondition";
    case Code::kUnavailable: return "unavailable";
    case Code::kIoError: return "io_error";
    case Code::kCorruption: return "corruption";
    case Code::kInternal: return "internal";
    case Code::kUnauthenticated: return "unauthenticated";
    case Code::kPermissionDenied: return "permission_denied";
    case Code::kResourceExhausted: return "resource_exhausted";
  }
  return "internal";
}

tl::unexpected<Error> errno_error(std::string_view what, int err) {
  std::string message(what);
  message += ": ";
  message += std::strerror(err);
  Code code = Code::kIoError;
  if (err == ENOENT || err == ESRCH) code = Code::kNotFound;
  if (err == EACCES || err == EPERM) code = Code::kFailedPrecondition;
  return tl::unexpected<Error>(Error{code, std::move(message)});
}

std::string clip_for_message(std::string_view text) {
  constexpr size_t kMost = 60;
  return text.size() <= kMost ? std::string(text) : std::string(text.substr(0, kMost)) + "...";
}

}  // namespace gpuq
