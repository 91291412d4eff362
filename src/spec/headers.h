// SPDX-License-Identifier: Apache-2.0
// Script headers: the `#gpuq key=value` lines (and the compatibility forms `# LANE=`,
// `# REQUIRES=`, `# DONE_IF=`, `# RETRIES=`, `# gpuq-in:`, `# gpuq-out:`) at the top of a job
// script, read into the submit-request fields of docs/api.md ("Scheduling (v1 additions)").
// DESIGN.md §2 "Script headers"; a step's script sets only its step's fields (ScriptRole).
// Parsing is strict: an unknown key, a malformed value or a #gpuq directive below the header
// block is an error naming file:line and the fix; nothing is silently ignored. The forms of the
// queues people move from (# LANE= and the others above, # gpuq-in:, # gpuq-out:) are read
// wherever they stand at the start of a line, as those queues read them. `# gpuq-in:` and
// `# gpuq-out:` take one or more paths (shell words); a path ending in '/' is a directory.
// Pure functions over the text they are given; thread-safe.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "spec/diagnostic.h"
#include "spec/sweep.h"

namespace gpuq::spec {

struct HeaderFields {
  // Submit-request keys (docs/api.md) set by the headers: "gpus": 2, "after": ["a"],
  // "lanes": ["net"], "est": "3h", "inputs": [...], ... Durations stay strings as written;
  // "priority" is an integer or a name, as written.
  nlohmann::json fields = nlohmann::json::object();
  // field -> the line that set it (the first line, for lists that several lines add to).
  std::map<std::string, int> lines;
  // list field -> the line of each of its entries, in order (for messages about one entry).
  std::map<std::string, std::vector<int>> item_lines;
};

// What a script is to its job: the job's own script, or one step of a job with steps
// (docs/jobs.md, "Steps"). A step's script may set only what belongs to one step: name, timeout,
// done-if (or # DONE_IF=) and image; every other directive sets the whole job, and is an error
// at its line saying to set it on the job.
enum class ScriptRole { kJob, kStep };

// The header fields a step's script may set, as a step of a submit request takes them.
inline constexpr const char* kStepHeaderFields[] = {"name", "timeout", "done_if", "image"};

// The header block is the run of shebang, comment and blank lines at the top of the script; it
// ends at the first line that is neither (the compatibility forms are read below it too). Every
// finding is returned, not only the first.
struct HeaderScan {
  HeaderFields headers;            // what the valid directives set
  std::vector<Diagnostic> errors;  // each an "error" naming file_name and a line
  // The job array or grid that `array=` or `grid=` (with `max-running=`) make, when valid.
  std::optional<Sweep> sweep;
};
HeaderScan scan_script_headers(std::string_view file_name, std::string_view text,
                               ScriptRole role = ScriptRole::kJob);

// The headers of a script, or the first error ("file:line: message"). Also refuses an empty or
// binary script (check_script_text).
Result<HeaderFields> parse_script_headers(std::string_view file_name, std::string_view text,
                                          ScriptRole role = ScriptRole::kJob);

// The #gpuq keys this gpuq understands, in the order people meet them ("name, gpus, ...").
std::string known_header_keys();

}  // namespace gpuq::spec
