// SPDX-License-Identifier: Apache-2.0
// Where the home's token may go under `gpuq --url` (docs/api.md, "The CLI over TCP"). The
// daemon records the address its TCP listener bound in $GPUQ_HOME/token.listen
// (base/token_file.h); the CLI sends the token it read from the home only to a URL that names
// that listener: the same host and port, or, for a listener on every address, that family's
// loopback address with its port (0.0.0.0: 127.0.0.1; [::]: [::1]). Not `localhost`, which
// may resolve to the other family, where another user of the machine may listen on the same
// port. Anything else (another host or port, https://, no record) gets no token, so `gpuq --url
// http://elsewhere` cannot hand the local daemon's token to another server. A token given by
// --token or $GPUQ_TOKEN is the user's own choice and is not judged here.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/paths.h"
#include "cli/transport.h"

namespace gpuq::cli {

// Whether the home's token may be sent to `url`, given `listen`, the recorded "HOST:PORT" of
// the listener it was made for ("" when there is no record).
bool token_may_go_to(const DaemonUrl& url, std::string_view listen);

// Why no token went to `url` (for an answer 401): the home's token file, the address it was
// made for (or that none is recorded) and how to send it anyway.
std::string token_withheld_reason(const DaemonUrl& url, std::string_view listen,
                                  const HomeLayout& home);

}  // namespace gpuq::cli
