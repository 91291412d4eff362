// SPDX-License-Identifier: Apache-2.0
// The `#gpuq` keys of script headers (spec/headers.h): each key's spelling, the submit-request
// field it sets and the kind of value it takes, in the order people meet them. Internal to the
// header reader (headers.cc), apart from known_header_keys in headers.h.
// Constant tables and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::spec::header_keys {

enum class Kind {
  kString,         // one non-empty string
  kInteger,        // a whole number in [min, max]
  kPriority,       // an integer or a priority name, kept as written
  kList,           // repeatable; each value one entry
  kCommaList,      // repeatable; values split at commas
  kDuration,       // "3h", kept as a string
  kBool,           // bare key = true
  kTime,           // RFC 3339 (kept as a string) or epoch milliseconds
  kPreempt,        // yield | restart | never
  kArray,          // a job array's indexes, as `gpuq submit --array` (spec/sweep.h)
  kGridParam,      // repeatable; one grid parameter NAME=VALUES per line, as `--grid`
  kImage,          // a container image reference (model/image_ref.h)
  kPull,           // missing | always | never
  kContainerUser,  // UID[:GID] or NAME[:GROUP]
  kUnsupported,    // a key of the design that this gpuq cannot honour yet
};

struct Key {
  const char* flag;   // as written in `#gpuq` lines and `gpuq submit` flags
  const char* field;  // the submit-request field
  Kind kind;
  int64_t min = 0;
  int64_t max = 0;
};

// Every key, in the order people meet them.
const std::vector<Key>& keys();

// The key of `name`, written as a flag (done-if), a request field (done_if) or `lanes`; nullptr
// when there is none.
const Key* find_key(std::string name);

// "did you mean 'gpus'? " for a key close to `unknown`, else "".
std::string suggestion(std::string_view unknown);

// How the header field `field` is written in a script: "gpus=", "# gpuq-in:".
std::string directive_of(const std::string& field);

}  // namespace gpuq::spec::header_keys
