// SPDX-License-Identifier: Apache-2.0
#include "spec/diagnostic.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuq::spec {

std::string Diagnostic::text() const {
  if (line <= 0) return fmt::format("{}: {}: {}", file, severity, message);
  return fmt::format("{}:{}: {}: {}", file, line, severity, message);
}

std::string Diagnostic::located_message() const {
  if (line <= 0) return fmt::format("{}: {}", file, message);
  return fmt::format("{}:{}: {}", file, line, message);
}

Diagnostic error_at(std::string file, int line, std::string message) {
  return Diagnostic{std::move(file), line, kError, std::move(message)};
}

Diagnostic warning_at(std::string file, int line, std::string message) {
  return Diagnostic{std::move(file), line, kWarning, std::move(message)};
}

Diagnostic error_from_message(const std::string& file, const std::string& message) {
  std::string_view rest(message);
  if (rest.substr(0, file.size()) != file || rest.size() <= file.size() ||
      rest[file.size()] != ':') {
    return error_at(file, 0, message);
  }
  rest.remove_prefix(file.size() + 1);
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  int line = 0;
  if (digits > 0 && digits < 9 && digits < rest.size() && rest[digits] == ':') {
    line = std::stoi(std::string(rest.substr(0, digits)));
    rest.remove_prefix(digits + 1);
  }
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return error_at(file, line, std::string(rest));
}

void sort_diagnostics(std::vector<Diagnostic>& diagnostics) {
  std::stable_sort(diagnostics.begin(), diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     if (a.file != b.file) return a.file < b.file;
                     return a.line < b.line;
                   });
  std::vector<Diagnostic> unique;
  for (auto& d : diagnostics) {
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(std::move(d));
  }
  diagnostics = std::move(unique);
}

}  // namespace gpuq::spec
