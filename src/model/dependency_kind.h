// SPDX-License-Identifier: Apache-2.0
// A dependency's kind from its stored or requested name ("afterok", "afterany", "afternotok",
// "file", "requires"): the inverse of to_string(Dependency::Kind) in model/job.h, shared by
// the spec's JSON reader and the store's light reads of specs. Pure; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "model/job.h"

namespace gpuq {

// nullopt for a name that is no kind.
std::optional<Dependency::Kind> parse_dependency_kind(std::string_view text);

}  // namespace gpuq
