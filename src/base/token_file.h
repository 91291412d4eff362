// SPDX-License-Identifier: Apache-2.0
// The HTTP listener's token: $GPUQ_HOME/token (HomeLayout::token()), 256 random bits from
// getrandom(2) written as 64 lower-case hex characters, mode 0600. The daemon creates it at its
// first start with HTTP on and keeps it afterwards; `gpuq dashboard` and `gpuq --url` read it.
// A token file that others could read, or that belongs to another user, is refused: whoever
// reads the token can drive the daemon over TCP. The token itself never appears in a message.
// Beside it, $GPUQ_HOME/token.listen (HomeLayout::token_listen()) records the address the
// daemon's listener bound at its last start ("127.0.0.1:7878\n"): `gpuq --url` sends the home's
// token only to that address (cli/token_scope.h), not to any URL it is given.
// Plain functions over the file system; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

#include "base/status.h"

namespace gpuq {

inline constexpr size_t kTokenHexChars = 64;

// 256 bits from getrandom(2) as 64 hex characters.
Result<std::string> random_token();

// Whether `text` has the form of a token (64 hex characters).
bool is_token(std::string_view text);

// The token in the file at `path`, made first when there is none (written to a temporary file
// beside it, then renamed, so a crash never leaves half a token). An existing file must be a
// regular file owned by `uid` with no group or other permission bits, holding a token (a
// trailing newline is fine); otherwise Code::kFailedPrecondition naming the file and the fix.
Result<std::string> ensure_token_file(const std::string& path, uid_t uid);

// The token in the file at `path` (for the CLI): kNotFound when there is none, an errno_error
// when it cannot be read, kFailedPrecondition when it holds no token.
Result<std::string> read_token_file(const std::string& path);

// Records `listen` (the bound "HOST:PORT" GET /v1/health reports) and a newline at `path`,
// mode 0600, through a temporary file and a rename, so a reader sees the old record or the new.
Status write_token_listen(const std::string& path, std::string_view listen);

// Removes the record at `path` (a start whose listener did not bind: the address it names may
// be another program's now); none there is fine.
Status remove_token_listen(const std::string& path);

// The recorded address at `path` without its newline; "" when there is none or it cannot be
// read (a daemon older than the record: the token then goes nowhere on its own).
std::string read_token_listen(const std::string& path);

}  // namespace gpuq
