// SPDX-License-Identifier: Apache-2.0
// The version of the HTTP API (docs/api.md, "Versions") that this build's daemon serves and
// its CLI speaks. Both send it in a `Gpuq-Api` header: the CLI with every request, the daemon
// with every answer, and each refuses the other's when it differs, with a message saying which
// versions met and what to do. It changes only when an old CLI would misread a new daemon (or
// the reverse): fields and endpoints added keep it. A request without the header (curl, the
// dashboard, scripts) is served as this version. `gpuq --version` prints it.
#pragma once

#include <optional>
#include <string_view>

namespace gpuq {

inline constexpr int kApiVersion = 1;
inline constexpr char kApiVersionHeader[] = "Gpuq-Api";

// A header's value as a version: a whole number from 1, nothing else; nullopt otherwise.
std::optional<int> parse_api_version(std::string_view text);

}  // namespace gpuq
