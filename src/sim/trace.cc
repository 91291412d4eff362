// SPDX-License-Identifier: Apache-2.0
#include "sim/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "model/job.h"

namespace gpuq::sim {
namespace {

enum Column { kId, kSubmit, kGpus, kDuration, kPriority, kEstimate, kColumns };
constexpr const char* kNames[kColumns] = {"id",         "submit_s", "gpus",
                                          "duration_s", "priority", "est_s"};

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    size_t comma = line.find(',', start);
    fields.push_back(trim(std::string_view(line).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) return fields;
    start = comma + 1;
  }
}

// Non-negative seconds, possibly fractional, to milliseconds.
bool parse_seconds(const std::string& text, int64_t& ms) {
  if (text.empty()) return false;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v) || v < 0 ||
      v > 1e12)
    return false;
  ms = std::llround(v * 1000.0);
  return true;
}

bool parse_int(const std::string& text, int64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<std::vector<SimJob>> parse_trace_csv(const std::string& text, const std::string& file) {
  std::vector<int> layout = {kId,       kSubmit,   kGpus,
                             kDuration, kPriority, kEstimate};  // column -> field
  bool header_allowed = true;
  std::vector<SimJob> jobs;
  std::unordered_set<std::string> names;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    auto error = [&](const std::string& message) {
      return fail(Code::kInvalidArgument, fmt::format("{}:{}: {}", file, number, message));
    };
    std::string content = trim(line);
    if (content.empty() || content[0] == '#') continue;
    std::vector<std::string> fields = split(content);
    bool names_a_column = std::any_of(fields.begin(), fields.end(), [](const std::string& f) {
      return std::any_of(std::begin(kNames), std::end(kNames),
                         [&](const char* n) { return f == n; });
    });
    if (header_allowed && names_a_column) {
      layout.assign(kColumns, -1);
      for (size_t i = 0; i < fields.size(); ++i) {
        int column = -1;
        for (int c = 0; c < kColumns; ++c) {
          if (fields[i] == kNames[c]) column = c;
        }
        if (column < 0) {
          return error(fmt::format(
              "unknown column '{}'; known: id, submit_s, gpus, duration_s, priority, est_s",
              fields[i]));
        }
        if (layout[static_cast<size_t>(column)] >= 0)
          return error(fmt::format("column '{}' given twice", fields[i]));
        layout[static_cast<size_t>(column)] = static_cast<int>(i);
      }
      for (int c : {kId, kSubmit, kGpus, kDuration}) {
        if (layout[static_cast<size_t>(c)] < 0)
          return error(fmt::format("the header lacks column '{}'", kNames[c]));
      }
      header_allowed = false;
      continue;
    }
    header_allowed = false;
    size_t wanted = 0;
    for (int c = 0; c < kColumns; ++c)
      wanted = std::max<size_t>(wanted, static_cast<size_t>(layout[static_cast<size_t>(c)] + 1));
    size_t required = 0;
    for (int c : {kId, kSubmit, kGpus, kDuration})
      required =
          std::max<size_t>(required, static_cast<size_t>(layout[static_cast<size_t>(c)] + 1));
    if (fields.size() < required || fields.size() > wanted) {
      return error(fmt::format("{} fields; expected id,submit_s,gpus,duration_s[,priority][,est_s]",
                               fields.size()));
    }
    auto field = [&](int column) -> std::string {
      int at = layout[static_cast<size_t>(column)];
      return at >= 0 && static_cast<size_t>(at) < fields.size() ? fields[static_cast<size_t>(at)]
                                                                : std::string();
    };
    SimJob job;
    job.name = field(kId);
    if (job.name.empty()) return error("empty id");
    if (!names.insert(job.name).second)
      return error(fmt::format("id '{}' appears twice", job.name));
    if (!parse_seconds(field(kSubmit), job.submit_ms)) {
      return error(fmt::format("submit_s '{}' is not a number of seconds >= 0", field(kSubmit)));
    }
    int64_t gpus = 0;
    if (!parse_int(field(kGpus), gpus) || gpus < 0 || gpus > 1024) {
      return error(fmt::format("gpus '{}' is not an integer from 0 to 1024", field(kGpus)));
    }
    job.gpus = static_cast<int>(gpus);
    if (!parse_seconds(field(kDuration), job.duration_ms)) {
      return error(
          fmt::format("duration_s '{}' is not a number of seconds >= 0", field(kDuration)));
    }
    if (std::string p = field(kPriority); !p.empty()) {
      auto priority = parse_priority(p);
      if (!priority) return error(priority.error().message);
      job.priority = *priority;
    }
    job.estimate_ms = job.duration_ms;
    if (std::string est = field(kEstimate); !est.empty()) {
      if (!parse_seconds(est, job.estimate_ms))
        return error(fmt::format("est_s '{}' is not a number of seconds >= 0", est));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<SimJob>> read_trace_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_error(fmt::format("cannot read trace {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return errno_error(fmt::format("cannot read trace {}", path));
  return parse_trace_csv(text.str(), path);
}

}  // namespace gpuq::sim
