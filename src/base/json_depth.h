// SPDX-License-Identifier: Apache-2.0
// How deeply a JSON text nests, read from the text before anything parses it. Readers of files
// whose shape is a few levels deep (plans, the fake GPU state file) refuse deeper text first:
// nlohmann::json copies, compares and dumps values recursively, so a value nested 100,000 deep
// overflows the stack, and structures that grow with depth (spec/json_lines.h) would cost
// memory quadratic in it.
// A pure function over text; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace gpuq {

// The byte offset of the first '[' or '{' (outside strings) that opens a level deeper than
// `max_depth` (the top-level value is level 1), or nullopt when the text stays within it. Text
// that is not JSON is scanned all the same; the parser names its faults afterwards.
std::optional<size_t> json_nesting_beyond(std::string_view text, int max_depth);

}  // namespace gpuq
