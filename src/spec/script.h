// SPDX-License-Identifier: Apache-2.0
// Reading and checking job scripts before anything is queued: a missing, unreadable, empty,
// binary or non-UTF-8 script is refused with a message naming the file and the fix.
// Used by the CLI (which reads the file) and by the daemon (which re-checks the text it is sent).
// Pure apart from reading the named file; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq::spec {

// Scripts larger than this are refused: a job script is a launcher, not data.
constexpr size_t kMaxScriptBytes = 1 << 20;

// Checks a script's content; `name` is used in messages.
Status check_script_text(std::string_view name, std::string_view text);

// Reads `path` and checks it; returns the text.
Result<std::string> read_script(const std::string& path);

}  // namespace gpuq::spec
