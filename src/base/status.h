// SPDX-License-Identifier: Apache-2.0
// Error values for every gpuq module: an Error carries a stable code and a message a person
// can act on; Result<T> is a value or an Error; Status is Result<void>.
// No exceptions cross module boundaries: functions that can fail return one of these.
// Values are plain and copyable; no thread rules beyond those of std::string.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <tl/expected.hpp>

namespace gpuq {

enum class Code {
  kInvalidArgument,     // the caller's input is wrong; the message says how to fix it
  kNotFound,            // a named thing does not exist
  kConflict,            // the request contradicts existing state
  kFailedPrecondition,  // the system is not in a state that allows this now
  kUnavailable,         // a peer (daemon, process) cannot be reached
  kIoError,             // the operating system refused
  kCorruption,          // stored data is unreadable
  kInternal,            // a bug
  kUnauthenticated,     // no credentials, or wrong ones (the HTTP listener's token)
  kPermissionDenied,    // the credentials are good, but this is not allowed
  kResourceExhausted,   // a quota is used up (a user's max_queued); wait, or ask an admin
};

// The stable, lower-case name of a code, used in JSON errors ("invalid_argument").
std::string_view code_name(Code code);

struct Error {
  Code code = Code::kInternal;
  std::string message;
};

template <class T>
using Result = tl::expected<T, Error>;
using Status = tl::expected<void, Error>;

inline tl::unexpected<Error> fail(Code code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}
// Bad input: fail(Code::kInvalidArgument, message).
inline tl::unexpected<Error> invalid_argument(std::string message) {
  return fail(Code::kInvalidArgument, std::move(message));
}

// Converts an errno value into an Error whose message is "<what>: <strerror>".
tl::unexpected<Error> errno_error(std::string_view what, int err = errno);

inline Status ok() { return {}; }

// Text someone sent, cut short for an error message (its first 60 bytes and "..."): a message
// stays small whatever was sent.
std::string clip_for_message(std::string_view text);

}  // namespace gpuq
