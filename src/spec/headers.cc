// SPDX-License-Identifier: Apache-2.0
#include "spec/headers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "base/duration.h"
#include "base/time.h"
#include "model/image_ref.h"
#include "model/job.h"
#include "model/spec_json.h"
#include "spec/header_keys.h"
#include "spec/script.h"
#include "spec/shell_words.h"
#include "spec/sweep.h"

namespace gpuq::spec {
namespace {

using header_keys::directive_of;
using header_keys::find_key;
using header_keys::Key;
using header_keys::keys;
using header_keys::Kind;
using header_keys::suggestion;
using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Removes one pair of matching outer quotes; inside double quotes, \" and \\ are escapes.
std::string unquote_whole(std::string_view value) {
  if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
    return std::string(value.substr(1, value.size() - 2));
  }
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
    std::string out;
    std::string_view inner = value.substr(1, value.size() - 2);
    for (size_t i = 0; i < inner.size(); ++i) {
      if (inner[i] == '\\' && i + 1 < inner.size() && (inner[i + 1] == '"' || inner[i + 1] == '\\'))
        ++i;
      out += inner[i];
    }
    return out;
  }
  return std::string(value);
}

std::vector<std::string> split_commas(const std::string& value) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = value.find(',', start);
    parts.emplace_back(trim(std::string_view(value).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

class HeaderReader {
 public:
  HeaderReader(std::string_view file, HeaderScan& scan) : file_(file), scan_(scan) {}

  void error(int line, std::string message) {
    scan_.errors.push_back(error_at(file_, line, std::move(message)));
  }

  // Sets `key` from `value` (or from a bare key when `bare`), as written by `form` on `line`.
  void set(const Key& key, bool bare, const std::string& value, int line, std::string_view form) {
    json& fields = scan_.headers.fields;
    auto& lines = scan_.headers.lines;
    bool is_list =
        key.kind == Kind::kList || key.kind == Kind::kCommaList || key.kind == Kind::kGridParam;
    if (key.kind == Kind::kUnsupported) {
      return error(
          line, fmt::format("{}= is not supported by this gpuq yet; remove it (the job would run "
                            "without it)",
                            key.flag));
    }
    if (!is_list && lines.count(key.field)) {
      return error(line, fmt::format("'{}' is already set at line {}; set it once", key.flag,
                                     lines[key.field]));
    }
    if (bare && key.kind != Kind::kBool) {
      return error(line, fmt::format("'{}' needs a value, as in {}", key.flag, example(key)));
    }
    if (!bare && value.empty()) {
      return error(line,
                   fmt::format("'{}' has an empty value; write it as {}", key.flag, example(key)));
    }
    auto parsed = parse_value(key, bare, value, form);
    if (!parsed) {
      rejected_.insert(key.field);
      return error(line, parsed.error().message);
    }
    if (is_list) {
      if (!fields.contains(key.field)) fields[key.field] = json::array();
      for (auto& item : *parsed) {
        fields[key.field].push_back(std::move(item));
        scan_.headers.item_lines[key.field].push_back(line);
      }
    } else {
      fields[key.field] = std::move(*parsed);
    }
    lines.emplace(key.field, line);
  }

  // Whether a directive for `field` was written but refused (its error is already reported).
  bool rejected(const std::string& field) const { return rejected_.count(field) > 0; }

 private:
  static std::string example(const Key& key) {
    switch (key.kind) {
      case Kind::kInteger:
        return fmt::format("{}=2", key.flag);
      case Kind::kPriority:
        return "priority=high (or an integer, lower runs first)";
      case Kind::kDuration:
        return fmt::format("{}=3h", key.flag);
      case Kind::kBool:
        return key.flag;
      case Kind::kTime:
        return "not-before=2026-11-29T10:00:00Z";
      case Kind::kPreempt:
        return "preempt=yield (or restart, or never)";
      case Kind::kArray:
        return "array=0-9 (or 0-99:2%4, or 1,4,9)";
      case Kind::kGridParam:
        return "grid=lr=1e-4,3e-4 (one parameter per line)";
      case Kind::kImage:
        return "image=nvcr.io/nvidia/pytorch:24.01-py3";
      case Kind::kPull:
        return "pull=always (or missing, or never)";
      case Kind::kContainerUser:
        return "container-user=1000:1000";
      case Kind::kList:
      case Kind::kCommaList:
      case Kind::kString:
        return fmt::format("{}=\"...\"", key.flag);
      case Kind::kUnsupported:
        break;
    }
    return key.flag;
  }

  // The JSON value for one directive; lists come back as arrays of their new entries.
  Result<json> parse_value(const Key& key, bool bare, const std::string& value,
                           std::string_view form) {
    auto bad = [&](std::string why) { return fail(Code::kInvalidArgument, std::move(why)); };
    switch (key.kind) {
      case Kind::kString:
        return check_with_spec_json(key, json(value));
      case Kind::kInteger: {
        int64_t number = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
        if (ec != std::errc() || end != value.data() + value.size()) {
          return bad(
              fmt::format("{}{} is not a whole number; write it as {}", form, value, example(key)));
        }
        if (number < key.min || number > key.max) {
          return bad(fmt::format("{}{} is out of range; it must be between {} and {}", form, value,
                                 key.min, key.max));
        }
        return json(number);
      }
      case Kind::kPriority: {
        if (auto p = parse_priority(value); !p)
          return bad(fmt::format("{}{}: {}", form, value, p.error().message));
        bool digits =
            std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
        return digits ? json(std::stoll(value)) : json(value);
      }
      case Kind::kList:
      case Kind::kCommaList: {
        json items = json::array();
        for (auto& part :
             key.kind == Kind::kCommaList ? split_commas(value) : std::vector<std::string>{value}) {
          if (part.empty())
            return bad(fmt::format("{}{} has an empty entry; remove the extra comma", form, value));
          items.push_back(part);
        }
        return items;
      }
      case Kind::kDuration:
        if (auto d = parse_duration(value); !d)
          return bad(fmt::format("{}{}", form, d.error().message));
        return json(value);
      case Kind::kBool:
        if (bare || value == "true" || value == "yes" || value == "1") return json(true);
        if (value == "false" || value == "no" || value == "0") return json(false);
        return bad(fmt::format("{}{} is not true or false; write just '{}' to turn it on", form,
                               value, key.flag));
      case Kind::kTime: {
        bool digits =
            std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits && value.size() < 16) return json(std::stoll(value));
        if (auto t = parse_rfc3339(value); !t)
          return bad(fmt::format("{}{}: {}", form, value, t.error().message));
        return check_with_spec_json(key, json(value));  // e.g. refuses a time before 1970
      }
      case Kind::kPreempt:
        if (auto mode = parse_preempt_mode(value); !mode)
          return bad(fmt::format("{}{}: {}", form, value, mode.error().message));
        return json(value);
      case Kind::kArray:  // its size is the daemon's to judge ([sweeps] max_elements)
        if (auto sweep = parse_array(value, kMostSweepElements); !sweep)
          return bad(fmt::format("{}{}: {}", form, value, sweep.error().message));
        return json(value);
      case Kind::kGridParam:
        if (auto param = parse_grid_param(value, kMostSweepElements); !param)
          return bad(fmt::format("{}{}: {}", form, value, param.error().message));
        return json::array({value});
      case Kind::kImage:
        if (auto st = check_image_reference(value); !st)
          return bad(fmt::format("{}{}: {}", form, value, st.error().message));
        return json(value);
      case Kind::kPull:
        if (auto policy = parse_pull_policy(value); !policy)
          return bad(fmt::format("{}{}: {}", form, value, policy.error().message));
        return json(value);
      case Kind::kContainerUser:
        if (auto st = check_container_user(value); !st)
          return bad(fmt::format("{}{}: {}", form, value, st.error().message));
        return json(value);
      case Kind::kUnsupported:
        break;
    }
    return bad("internal: unhandled header kind");
  }

  // Checks a single field with the one validator of job specs, so headers and submits agree.
  static Result<json> check_with_spec_json(const Key& key, json value) {
    json probe = {{key.field, value}, {"argv", {"true"}}};
    if (auto spec = spec_from_json(probe); !spec) return tl::unexpected(spec.error());
    return value;
  }

  std::string file_;
  HeaderScan& scan_;
  std::set<std::string> rejected_;
};

constexpr const char* kCompatKeys[] = {"LANE", "REQUIRES", "DONE_IF", "RETRIES"};

// Matches `KEY = value` for a compatibility key; returns the key or nullptr.
const char* compat_key(std::string_view body, std::string_view& value) {
  for (const char* key : kCompatKeys) {
    std::string_view k(key);
    if (body.substr(0, k.size()) != k) continue;
    std::string_view rest = trim(body.substr(k.size()));
    if (rest.empty() || rest.front() != '=') continue;
    value = trim(rest.substr(1));
    return key;
  }
  return nullptr;
}

enum class Directive { kNone, kGpuq, kInOut, kResume, kCompat, kBadGpuq };

// What kind of directive a comment body (the text after '#') holds.
Directive classify(std::string_view body) {
  std::string_view lead = trim(body);
  auto starts_word = [&](std::string_view word) {
    return lead.substr(0, word.size()) == word &&
           (lead.size() == word.size() || is_space(lead[word.size()]));
  };
  if (starts_word("gpuq")) return Directive::kGpuq;
  if (lead.rfind("gpuq-in:", 0) == 0 || lead.rfind("gpuq-out:", 0) == 0) return Directive::kInOut;
  if (lead.rfind("gpuq-resume:", 0) == 0) return Directive::kResume;
  if (lead.rfind("gpuq-", 0) == 0 || lead.rfind("gpuq:", 0) == 0) return Directive::kBadGpuq;
  std::string_view ignored;
  if (compat_key(lead, ignored)) return Directive::kCompat;
  return Directive::kNone;
}

void read_gpuq_line(HeaderReader& reader, std::string_view rest, int line) {
  auto words = split_shell_words(rest, {.comments = true});
  if (!words) {
    return reader.error(
        line, fmt::format("#gpuq line: {}; close it on the same line", words.error().message));
  }
  for (const std::string& word : *words) {
    size_t eq = word.find('=');
    std::string name = word.substr(0, eq);
    if (name.empty()) {
      reader.error(line, fmt::format("'{}' has no key; write key=value (known: {})", word,
                                     known_header_keys()));
      continue;
    }
    const Key* key = find_key(name);
    if (!key) {
      reader.error(line, fmt::format("unknown directive '{}' in #gpuq line; {}known: {}", name,
                                     suggestion(name), known_header_keys()));
      continue;
    }
    bool bare = eq == std::string::npos;
    reader.set(*key, bare, bare ? "" : word.substr(eq + 1), line, fmt::format("{}=", key->flag));
  }
}

void read_compat_line(HeaderReader& reader, std::string_view body, int line) {
  std::string_view raw;
  std::string key = compat_key(trim(body), raw);
  std::string value = unquote_whole(raw);
  std::string form = fmt::format("# {}=", key);
  if (key == "LANE") return reader.set(*find_key("lane"), false, value, line, form);
  if (key == "REQUIRES") return reader.set(*find_key("requires"), false, value, line, form);
  if (key == "DONE_IF") return reader.set(*find_key("done-if"), false, value, line, form);
  reader.set(*find_key("retries"), false, value, line, form);
}

// `# gpuq-in: PATH...` / `# gpuq-out: PATH...`: one or more paths, as shell words ("my dir/x"
// quoted is one path); a path ending in '/' is a directory (fleet/job_data.h, DeclaredPath).
void read_in_out_line(HeaderReader& reader, HeaderScan& scan, std::string_view body, int line) {
  std::string_view lead = trim(body);
  bool input = lead.rfind("gpuq-in:", 0) == 0;
  const char* form = input ? "# gpuq-in:" : "# gpuq-out:";
  auto paths = split_shell_words(trim(lead.substr(input ? 8 : 9)));
  if (!paths) {
    return reader.error(line, fmt::format("{} {}; close it on the same line", form, paths.error().message));
  }
  if (paths->empty() ||
      std::any_of(paths->begin(), paths->end(), [](const std::string& p) { return p.empty(); })) {
    return reader.error(
        line, fmt::format("{} needs a path, as in '{} results/eval_*.json' (several: separate them "
                          "with spaces, and quote a path that holds one)",
                          form, form));
  }
  const char* field = input ? "inputs" : "outputs";
  json& fields = scan.headers.fields;
  if (!fields.contains(field)) fields[field] = json::array();
  for (std::string& path : *paths) {
    fields[field].push_back(std::move(path));
    scan.headers.item_lines[field].push_back(line);
  }
  scan.headers.lines.emplace(field, line);
}

// `# gpuq-resume: no`: a fleet job reclaimed from a dead node starts afresh, without the outputs
// its earlier attempts pushed (docs/fleet.md, "Resume elsewhere"); "yes" is the default.
void read_resume_line(HeaderReader& reader, HeaderScan& scan, std::string_view body, int line) {
  std::string value = unquote_whole(trim(trim(body).substr(12)));
  if (value != "no" && value != "yes") {
    return reader.error(line, fmt::format("# gpuq-resume: takes 'no' or 'yes', not '{}'",
                                          clip_for_message(value)));
  }
  if (auto earlier = scan.headers.lines.find("resume"); earlier != scan.headers.lines.end()) {
    return reader.error(line, fmt::format("# gpuq-resume: is already set at line {}; set it once",
                                          earlier->second));
  }
  scan.headers.fields["resume"] = value == "yes";
  scan.headers.lines.emplace("resume", line);
}

// restart-within= limits when a restart may happen, so it means nothing without
// preempt=restart; a header block must say both, as a submit request must.
void check_preemption(HeaderReader& reader, const HeaderScan& scan) {
  const json& fields = scan.headers.fields;
  if (!fields.contains("restart_within") || reader.rejected("preempt")) return;
  std::string mode = fields.value("preempt", std::string("never"));
  if (mode == "restart") return;
  reader.error(scan.headers.lines.at("restart_within"),
               fmt::format("restart-within= applies only to preempt=restart (this script's mode "
                           "is {}); add preempt=restart or remove restart-within=",
                           mode));
}

// pull= and container-user= say how a container job runs, so they mean nothing without image=;
// a header block must say both, as a submit request must.
void check_container(const HeaderScan& scan, HeaderReader& reader) {
  const json& fields = scan.headers.fields;
  if (fields.contains("image") || reader.rejected("image")) return;
  for (const char* field : {"pull", "container_user"}) {
    if (!fields.contains(field)) continue;
    reader.error(scan.headers.lines.at(field),
                 fmt::format("{}= applies only to a job that runs in a container; add "
                             "image=IMAGE or remove {}=",
                             find_key(field)->flag, find_key(field)->flag));
  }
}

// `# LANE=gpu` (or lane=gpu) puts the job in the GPU lane, whose jobs hold a GPU (model/job.h,
// kGpuLaneName): gpus=0 beside it says the opposite.
void check_gpu_lane(const HeaderScan& scan, HeaderReader& reader) {
  const json& fields = scan.headers.fields;
  if (!fields.contains("lanes") || !fields.contains("gpus") || fields["gpus"] != 0) return;
  for (const json& lane : fields["lanes"]) {
    if (lane != kGpuLaneName) continue;
    return reader.error(scan.headers.lines.at("gpus"),
                        fmt::format("gpus=0, and line {} puts the job in lane gpu, the GPU lane, "
                                    "whose jobs hold a GPU: remove one of them",
                                    scan.headers.lines.at("lanes")));
  }
}

// A step's script: every field that sets the whole job is an error at its line, and dropped.
void refuse_job_fields(HeaderScan& scan, HeaderReader& reader) {
  std::vector<std::pair<int, std::string>> job_fields;  // by line, as a person reads them
  for (const auto& [field, line] : scan.headers.lines) {
    const auto& allowed = kStepHeaderFields;
    if (std::find(std::begin(allowed), std::end(allowed), field) == std::end(allowed)) {
      job_fields.emplace_back(line, field);
    }
  }
  std::sort(job_fields.begin(), job_fields.end());
  for (const auto& [line, field] : job_fields) {
    const Key* key = find_key(field);
    std::string on_job =
        key ? fmt::format("gpuq submit --{}, or \"{}\" in a plan's job", key->flag, field)
            : fmt::format("\"{}\" in a plan's job", field);
    reader.error(line,
                 fmt::format("{} sets the whole job, not one step: set it on the job ({}) and "
                             "remove it from this step's script, which may set only name, "
                             "timeout, done-if and image",
                             directive_of(field), on_job));
    scan.headers.fields.erase(field);
    scan.headers.item_lines.erase(field);
  }
  for (const auto& [line, field] : job_fields) scan.headers.lines.erase(field);
}

// A sweep's headers together: array= or grid=, max-running= only with one of them and agreeing
// with array='s %MAX, and the grid's parameters distinct; the sweep into `scan.sweep`.
void read_sweep(HeaderReader& reader, HeaderScan& scan) {
  const json& fields = scan.headers.fields;
  const auto& lines = scan.headers.lines;
  if (reader.rejected("array") || reader.rejected("grid")) return;
  if (fields.contains("array") && fields.contains("grid")) {
    return reader.error(
        std::max(lines.at("array"), lines.at("grid")),
        "array= and grid=: give one (a grid's elements are numbered as an array's)");
  }
  if (fields.contains("max_running") && !fields.contains("array") && !fields.contains("grid")) {
    return reader.error(lines.at("max_running"),
                        "max-running= caps how many elements of a job array or grid run at once; "
                        "add array= or grid=, or remove it");
  }
  Result<Sweep> sweep = Sweep{};
  if (fields.contains("array"))
    sweep = parse_array(fields["array"].get<std::string>(), kMostSweepElements);
  if (fields.contains("grid")) {
    std::vector<SweepParam> params;
    for (const auto& text : fields["grid"]) {
      params.push_back(*parse_grid_param(text.get<std::string>(), kMostSweepElements));  // checked
    }
    sweep = make_grid(std::move(params), 0, kMostSweepElements);
    if (!sweep)
      return reader.error(lines.at("grid"), fmt::format("grid=: {}", sweep.error().message));
  }
  if (!fields.contains("array") && !fields.contains("grid")) return;
  if (fields.contains("max_running")) {
    int max_running = fields["max_running"].get<int>();
    if (sweep->max_running != 0 && max_running != sweep->max_running) {
      return reader.error(lines.at("max_running"),
                          fmt::format("array= says %{} and max-running= {}; give one",
                                      sweep->max_running, max_running));
    }
    sweep->max_running = max_running;
  }
  scan.sweep = std::move(*sweep);
}

}  // namespace

HeaderScan scan_script_headers(std::string_view file_name, std::string_view text, ScriptRole role) {
  HeaderScan scan;
  if (auto checked = check_script_text(file_name, text); !checked) {
    scan.errors.push_back(error_from_message(std::string(file_name), checked.error().message));
    return scan;
  }
  HeaderReader reader(file_name, scan);
  int first_command = 0;  // the line that ended the header block; 0 while inside it
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string_view line =
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    start = end == std::string_view::npos ? text.size() : end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view lead = trim(line);
    if (lead.empty()) continue;
    if (lead.front() != '#') {
      if (!first_command) first_command = number;
      continue;
    }
    std::string_view body = lead.substr(1);
    Directive kind = number == 1 && body.rfind('!', 0) == 0 ? Directive::kNone : classify(body);
    if (kind == Directive::kNone) continue;
    // The forms of the queues people move from (# LANE=, # REQUIRES=, # DONE_IF=, # RETRIES=,
    // # gpuq-in:, # gpuq-out:) are read wherever their lines are, as those queues read them;
    // gpuq's own #gpuq lines belong to the header block.
    const bool anywhere = kind == Directive::kCompat || kind == Directive::kInOut;
    if (first_command) {
      // Only lines at the start of a line: an indented one is in a heredoc or a function.
      if (line.front() != '#') continue;
      if (!anywhere) {
        reader.error(number,
                     fmt::format("gpuq directive below the header block (the first command is at "
                                 "line {}); gpuq reads its own directives (#gpuq, # gpuq-resume:) "
                                 "only from the comment lines at the top of the script: move this "
                                 "line above line {}",
                                 first_command, first_command));
        continue;
      }
    }
    switch (kind) {
      case Directive::kGpuq:
        read_gpuq_line(reader, trim(body).substr(4), number);
        break;
      case Directive::kInOut:
        read_in_out_line(reader, scan, body, number);
        break;
      case Directive::kResume:
        read_resume_line(reader, scan, body, number);
        break;
      case Directive::kCompat:
        read_compat_line(reader, body, number);
        break;
      case Directive::kBadGpuq:
        reader.error(
            number,
            fmt::format("unknown gpuq directive '#{}'; use '#gpuq key=value', '# gpuq-in: PATH', "
                        "'# gpuq-out: PATH' or '# gpuq-resume: no'",
                        std::string(trim(body))));
        break;
      case Directive::kNone:
        break;
    }
  }
  if (role == ScriptRole::kStep) {
    refuse_job_fields(scan, reader);
    std::stable_sort(scan.errors.begin(), scan.errors.end(),
                     [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
    return scan;
  }
  check_preemption(reader, scan);
  check_container(scan, reader);
  check_gpu_lane(scan, reader);
  read_sweep(reader, scan);
  return scan;
}

Result<HeaderFields> parse_script_headers(std::string_view file_name, std::string_view text,
                                          ScriptRole role) {
  HeaderScan scan = scan_script_headers(file_name, text, role);
  if (!scan.errors.empty())
    return fail(Code::kInvalidArgument, scan.errors.front().located_message());
  return std::move(scan.headers);
}

}  // namespace gpuq::spec
