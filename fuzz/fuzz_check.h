// SPDX-License-Identifier: Apache-2.0
// Shared by the fuzz targets (fuzz/*_fuzz.cc): FUZZ_CHECK for their invariants, the input as
// text, and the check that a parser fails only with the code it documents. A failed check prints what broke and aborts, which libFuzzer reports as a crash (and
// saves the input) and which fails the replay test of the normal build (fuzz/replay_test.cc).
// Header-only; no state.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/status.h"

namespace gpuq::fuzz {

[[noreturn]] inline void check_failed(const char* condition, const char* file, int line,
                                      const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n%s\n", file, line, condition,
               detail.c_str());
  std::abort();
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return size == 0 ? std::string_view() : std::string_view(reinterpret_cast<const char*>(data), size);
}

// The number of lines of `text` as the parsers count them (a last line without '\n' counts).
inline int line_count(std::string_view text) {
  int lines = 1;
  for (char c : text) lines += c == '\n';
  return lines;
}

}  // namespace gpuq::fuzz

// Checks an invariant; the rest of the arguments are a fmt format string and its values that
// say what was seen.
#define FUZZ_CHECK(condition, ...)                                                    \
  do {                                                                                \
    if (!(condition)) {                                                               \
      ::gpuq::fuzz::check_failed(#condition, __FILE__, __LINE__, fmt::format(__VA_ARGS__)); \
    }                                                                                 \
  } while (0)

namespace gpuq::fuzz {

// True when `result` holds a value; otherwise checks that its error has `code`, the one the
// parser documents for bad input (never kInternal, never another code).
template <class T>
bool parsed_or_failed_with(const Result<T>& result, Code code) {
  if (result) return true;
  FUZZ_CHECK(result.error().code == code, "error code {} ({}), expected {}",
             code_name(result.error().code), result.error().message, code_name(code));
  return false;
}

}  // namespace gpuq::fuzz
