// SPDX-License-Identifier: Apache-2.0
// One finding about a script or plan file, pointing at the line a person must change: the
// shared currency of header parsing, plan loading and `gpuq lint`. A plain value; thread-safe
// as a value.
#pragma once

#include <string>
#include <vector>

namespace gpuq::spec {

struct Diagnostic {
  std::string file;      // the file to edit, as the caller named it
  int line = 0;          // 1-based; 0 when the finding is about the whole file
  std::string severity;  // "error" or "warning"
  std::string message;   // what is wrong and how to fix it

  // "file:line: severity: message" ("file: severity: message" when line is 0).
  std::string text() const;
  // "file:line: message": the form used for a Result's error message.
  std::string located_message() const;

  bool operator==(const Diagnostic&) const = default;
};

inline constexpr const char* kError = "error";
inline constexpr const char* kWarning = "warning";

Diagnostic error_at(std::string file, int line, std::string message);
Diagnostic warning_at(std::string file, int line, std::string message);

// An error from a function that prefixes its messages with "file:line: " or "file: " (as
// check_script_text and read_script do), split into its parts; other messages keep line 0.
Diagnostic error_from_message(const std::string& file, const std::string& message);

// Orders by file, then line, keeping the order of findings on the same line; drops exact
// duplicates (a script reached through two plan jobs is reported once).
void sort_diagnostics(std::vector<Diagnostic>& diagnostics);

}  // namespace gpuq::spec
