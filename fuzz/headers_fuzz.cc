// SPDX-License-Identifier: Apache-2.0
// Fuzz target: script headers. The input is a whole job script, handed to
// spec::scan_script_headers and spec::parse_script_headers as the CLI and the daemon hand in a
// script's text (`#gpuq key=value` lines and the `# LANE=`, `# REQUIRES=`, `# DONE_IF=`,
// `# RETRIES=`, `# gpuq-in:` and `# gpuq-out:` forms).
// Invariants: parse fails exactly when the scan has errors, with the first of them; every error
// names the file and a line of the text; headers that parse, written back as `#gpuq` lines,
// parse to the same fields.
#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "spec/headers.h"
#include "spec/script.h"

namespace {

using gpuq::fuzz::line_count;
using nlohmann::json;

constexpr std::string_view kFile = "job.sh";

// One shell word that split_words reads back as `value`: single quotes keep every character,
// and a single quote itself is written as '\'' (close, escaped quote, open).
std::string shell_word(const std::string& value) {
  std::string word = "'";
  for (char c : value) word += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return word + "'";
}

// The fields written back as a script: one directive per value, in the flag spelling that
// find_key accepts for a field (its own name), and `# gpuq-in:` / `# gpuq-out:` for paths,
// whose one pair of outer single quotes unquote_whole removes.
std::string write_back(const json& fields) {
  std::string text = "#!/bin/bash\n";
  for (const auto& [field, value] : fields.items()) {
    if (field == "inputs" || field == "outputs") {
      for (const auto& path : value) {
        text += fmt::format("# gpuq-{}: '{}'\n", field == "inputs" ? "in" : "out",
                            path.get<std::string>());
      }
      continue;
    }
    const json items = value.is_array() ? value : json::array({value});
    for (const auto& item : items) {
      std::string written = item.is_string()    ? shell_word(item.get<std::string>())
                            : item.is_boolean() ? std::string(item.get<bool>() ? "true" : "false")
                                                : item.dump();
      text += fmt::format("#gpuq {}={}\n", field, written);
    }
  }
  return text + "true\n";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = gpuq::fuzz::as_text(data, size);
  gpuq::spec::HeaderScan scan = gpuq::spec::scan_script_headers(kFile, text);
  auto parsed = gpuq::spec::parse_script_headers(kFile, text);

  FUZZ_CHECK(parsed.has_value() == scan.errors.empty(), "parse and scan disagree");
  if (!parsed) {
    FUZZ_CHECK(parsed.error().message == scan.errors.front().located_message(),
               "parse says '{}', the scan's first error is '{}'", parsed.error().message,
               scan.errors.front().located_message());
  }
  const int lines = line_count(text);
  for (const auto& d : scan.errors) {
    FUZZ_CHECK(d.file == kFile && d.severity == gpuq::spec::kError && !d.message.empty(),
               "a malformed finding: {}", d.text());
    FUZZ_CHECK(d.line >= 0 && d.line <= lines, "{} names line {} of {}", d.text(), d.line, lines);
  }
  for (const auto& [field, line] : scan.headers.lines) {
    FUZZ_CHECK(line >= 1 && line <= lines, "field {} set at line {} of {}", field, line, lines);
  }
  if (!parsed) return 0;

  // Everything sent on is JSON: a header value that dump() refuses would fail a submit later.
  std::string dumped = parsed->fields.dump();
  std::string again_text = write_back(parsed->fields);
  if (again_text.size() > gpuq::spec::kMaxScriptBytes) return 0;
  auto again = gpuq::spec::parse_script_headers(kFile, again_text);
  FUZZ_CHECK(again.has_value(), "the fields {} written back as\n{}\ndo not parse: {}", dumped,
             again_text, again ? "" : again.error().message);
  FUZZ_CHECK(again->fields == parsed->fields, "the fields {} written back as\n{}\nparse as {}",
             dumped, again_text, again->fields.dump());
  return 0;
}
