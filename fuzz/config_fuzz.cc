// SPDX-License-Identifier: Apache-2.0
// Fuzz target: config.toml, the daemon's settings file (also read by `gpuq simulate`). The
// input is the file's text, handed to config::parse_config as load_config hands it, named
// /fuzz/home/config.toml.
// Invariants: an error is kInvalidArgument whose message starts with the path and a
// line:column inside the text ("/fuzz/home/config.toml:3:9: ") and holds no line break (it is
// one line of the daemon's log); a Config that reads has every value in the range config.h
// documents (lanes, scheduler policy, retries, runs, retention, preemption, cleanup, gpu,
// watch, hooks); written back as config.toml (toml++'s writer, durations and sizes in
// base/'s exact forms), it reads as the same Config.
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "base/duration.h"
#include "base/size.h"
#include "config/config.h"
#include "fuzz_check.h"

namespace {

using gpuq::config::Config;
using gpuq::config::HookConfig;
using gpuq::config::LaneConfig;

constexpr std::string_view kPath = "/fuzz/home/config.toml";

// config.h: durations are at most 30 days; retention.keep from a minute to 36500 days.
constexpr int64_t kMaxDurationMs = 30LL * 24 * 3'600'000;
constexpr int64_t kMinKeepMs = 60'000;
constexpr int64_t kMaxKeepMs = 36'500LL * 24 * 3'600'000;

bool in_range(int64_t value, int64_t min, int64_t max) { return value >= min && value <= max; }

bool is_duration(int64_t ms) { return in_range(ms, 0, kMaxDurationMs); }
bool is_positive_duration(int64_t ms) { return in_range(ms, 1, kMaxDurationMs); }

// The digits of "PATH:LINE:COLUMN: " at the start of `message`, as numbers; false when the
// message does not start so.
bool located(std::string_view message, int& line, int& column) {
  std::string prefix = std::string(kPath) + ":";
  if (message.substr(0, prefix.size()) != prefix) return false;
  std::istringstream in{std::string(message.substr(prefix.size()))};
  char colon1 = 0, colon2 = 0, space = 0;
  in >> line >> colon1 >> column >> colon2;
  in.get(space);
  return in && colon1 == ':' && colon2 == ':' && space == ' ';
}

void check_error(std::string_view text, const gpuq::Error& error) {
  FUZZ_CHECK(error.code == gpuq::Code::kInvalidArgument, "error code {}: {}",
             gpuq::code_name(error.code), error.message);
  int line = 0, column = 0;
  FUZZ_CHECK(located(error.message, line, column), "the error does not start with {}:L:C: {}",
             kPath, error.message);
  FUZZ_CHECK(line >= 1 && line <= gpuq::fuzz::line_count(text) && column >= 1,
             "the error names {}:{} in a text of {} lines: {}", line, column,
             gpuq::fuzz::line_count(text), error.message);
  FUZZ_CHECK(error.message.find_first_of("\r\n") == std::string::npos,
             "the error holds a line break: {}", error.message);
}

bool is_lane_name(const std::string& name) {
  bool gpu_name = name.size() > 3 && name.rfind("gpu", 0) == 0 &&
                  name.find_first_not_of("0123456789", 3) == std::string::npos;
  return !name.empty() && name != "gpu" && !gpu_name &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
}

void check_lanes(const std::vector<LaneConfig>& lanes) {
  std::set<std::string> names;
  for (const LaneConfig& lane : lanes) names.insert(lane.name);
  FUZZ_CHECK(names.size() == lanes.size(), "two lanes share a name");
  for (size_t i = 0; i < lanes.size(); ++i) {
    const LaneConfig& lane = lanes[i];
    FUZZ_CHECK(i == 0 || lanes[i - 1].name < lane.name, "lanes out of name order at {}", lane.name);
    FUZZ_CHECK(is_lane_name(lane.name), "lane name '{}'", lane.name);
    FUZZ_CHECK(in_range(lane.capacity, 1, gpuq::config::kMaxLaneCapacity), "lane {}: capacity {}",
               lane.name, lane.capacity);
    std::set<std::string> excluded;
    for (const std::string& other : lane.excludes) {
      FUZZ_CHECK(other != lane.name && (other == "gpu" || names.count(other)) &&
                     excluded.insert(other).second,
                 "lane {} excludes '{}'", lane.name, other);
    }
  }
}

void check_hooks(const std::vector<HookConfig>& hooks) {
  std::set<std::string> names;
  for (const HookConfig& hook : hooks) {
    FUZZ_CHECK(!hook.name.empty() && names.insert(hook.name).second, "hook name '{}'", hook.name);
    FUZZ_CHECK(hook.command.empty() != hook.url.empty(), "hook {}: command '{}', url '{}'",
               hook.name, hook.command, hook.url);
    FUZZ_CHECK(
        hook.url.empty() || hook.url.rfind("http://", 0) == 0 || hook.url.rfind("https://", 0) == 0,
        "hook {}: url '{}'", hook.name, hook.url);
    FUZZ_CHECK(
        !hook.events.empty() && std::none_of(hook.events.begin(), hook.events.end(),
                                             [](const std::string& glob) { return glob.empty(); }),
        "hook {}: an empty events list or glob", hook.name);
    FUZZ_CHECK(is_positive_duration(hook.timeout_ms) && is_positive_duration(hook.retry_min_ms) &&
                   in_range(hook.retry_max_ms, hook.retry_min_ms, kMaxDurationMs),
               "hook {}: timeout {} ms, retry {}..{} ms", hook.name, hook.timeout_ms,
               hook.retry_min_ms, hook.retry_max_ms);
  }
}

void check_watch(const gpuq::config::WatchConfig& watch) {
  FUZZ_CHECK(is_positive_duration(watch.interval_ms) && is_positive_duration(watch.repeat_ms) &&
                 is_positive_duration(watch.heartbeat_ms),
             "watch: interval {} ms, repeat {} ms, heartbeat {} ms", watch.interval_ms,
             watch.repeat_ms, watch.heartbeat_ms);
  for (int64_t ms : {watch.requires_warn_ms, watch.quiet_ms, watch.gpu_idle_ms,
                     watch.idle_with_work_ms, watch.empty_ms}) {
    FUZZ_CHECK(is_duration(ms), "a watch limit of {} ms", ms);
  }
  FUZZ_CHECK(
      watch.overdue_factor == 0 || (watch.overdue_factor >= 1 && watch.overdue_factor <= 1000),
      "watch.overdue_factor {}", watch.overdue_factor);
  FUZZ_CHECK(in_range(watch.gpu_idle_utilization, 0, 100), "watch.gpu_idle_utilization {}",
             watch.gpu_idle_utilization);
}

void check_ranges(const Config& c) {
  check_lanes(c.lanes);
  FUZZ_CHECK(c.policy == "fifo" || c.policy == "priority" || c.policy == "backfill", "policy '{}'",
             c.policy);
  for (int64_t ms : {c.backfill_unknown_limit_ms, c.retry_delay_ms, c.kill_grace_ms}) {
    FUZZ_CHECK(is_duration(ms), "a duration of {} ms", ms);
  }
  FUZZ_CHECK(std::isfinite(c.retry_backoff) && c.retry_backoff >= 1, "retries.backoff {}",
             c.retry_backoff);
  FUZZ_CHECK(in_range(c.retry_max_delay_ms, c.retry_delay_ms, kMaxDurationMs),
             "retries: delay {} ms, max_delay {} ms", c.retry_delay_ms, c.retry_max_delay_ms);
  FUZZ_CHECK(is_positive_duration(c.requires_timeout_ms) &&
                 is_positive_duration(c.requires_poll_ms) &&
                 in_range(c.requires_poll_max_ms, c.requires_poll_ms, kMaxDurationMs),
             "runs: requires_timeout {} ms, requires_poll {}..{} ms", c.requires_timeout_ms,
             c.requires_poll_ms, c.requires_poll_max_ms);
  FUZZ_CHECK(c.max_log_bytes == 0 || in_range(c.max_log_bytes, 4096, int64_t{1} << 62),
             "runs.max_log {} bytes", c.max_log_bytes);
  FUZZ_CHECK(c.retention_keep_ms == 0 || in_range(c.retention_keep_ms, kMinKeepMs, kMaxKeepMs),
             "retention.keep {} ms", c.retention_keep_ms);
  FUZZ_CHECK(in_range(c.preemption_gap, 1, 1000) && is_positive_duration(c.yield_grace_ms),
             "preemption: gap {}, yield_grace {} ms", c.preemption_gap, c.yield_grace_ms);
  FUZZ_CHECK(is_positive_duration(c.cleanup_poll_ms) &&
                 in_range(c.cleanup_limit_ms, c.cleanup_poll_ms + 1, kMaxDurationMs),
             "cleanup: poll {} ms, limit {} ms", c.cleanup_poll_ms, c.cleanup_limit_ms);
  FUZZ_CHECK(is_positive_duration(c.probe_interval_ms) &&
                 is_positive_duration(c.foreign_repeat_ms) &&
                 in_range(c.foreign_memory_mib, 0, 1'000'000'000),
             "gpu: probe_interval {} ms, foreign_repeat {} ms, foreign_memory_mib {}",
             c.probe_interval_ms, c.foreign_repeat_ms, c.foreign_memory_mib);
  check_watch(c.watch);
  check_hooks(c.hooks);
}

std::string duration_text(int64_t ms) { return gpuq::format_duration_exact(gpuq::Millis(ms)); }

toml::array string_list(const std::vector<std::string>& items) {
  toml::array list;
  for (const std::string& item : items) list.push_back(item);
  return list;
}

toml::table lanes_table(const std::vector<LaneConfig>& lanes) {
  toml::table table;
  for (const LaneConfig& lane : lanes) {
    table.insert(lane.name, toml::table{{"capacity", int64_t{lane.capacity}},
                                        {"excludes", string_list(lane.excludes)}});
  }
  return table;
}

toml::array hook_tables(const std::vector<HookConfig>& hooks) {
  toml::array tables;
  for (const HookConfig& hook : hooks) {
    toml::table table{{"name", hook.name},
                      {"events", string_list(hook.events)},
                      {"timeout", duration_text(hook.timeout_ms)},
                      {"retry_min", duration_text(hook.retry_min_ms)},
                      {"retry_max", duration_text(hook.retry_max_ms)}};
    if (hook.url.empty()) table.insert("command", hook.command);
    if (!hook.url.empty()) table.insert("url", hook.url);
    tables.push_back(std::move(table));
  }
  return tables;
}

toml::table watch_table(const gpuq::config::WatchConfig& w) {
  return toml::table{{"interval", duration_text(w.interval_ms)},
                     {"repeat", duration_text(w.repeat_ms)},
                     {"heartbeat", duration_text(w.heartbeat_ms)},
                     {"requires_warn", duration_text(w.requires_warn_ms)},
                     {"quiet", duration_text(w.quiet_ms)},
                     {"overdue_factor", w.overdue_factor},
                     {"gpu_idle", duration_text(w.gpu_idle_ms)},
                     {"gpu_idle_utilization", w.gpu_idle_utilization},
                     {"idle_with_work", duration_text(w.idle_with_work_ms)},
                     {"empty", duration_text(w.empty_ms)}};
}

// Every setting of `c` as config.toml, written by toml++ (strings escaped, floats exact).
std::string write_back(const Config& c) {
  toml::table root{
      {"lanes", lanes_table(c.lanes)},
      {"scheduler",
       toml::table{{"policy", c.policy},
                   {"backfill_unknown_limit", duration_text(c.backfill_unknown_limit_ms)}}},
      {"retries", toml::table{{"delay", duration_text(c.retry_delay_ms)},
                              {"backoff", c.retry_backoff},
                              {"max_delay", duration_text(c.retry_max_delay_ms)}}},
      {"runs", toml::table{{"kill_grace", duration_text(c.kill_grace_ms)},
                           {"requires_timeout", duration_text(c.requires_timeout_ms)},
                           {"requires_poll", duration_text(c.requires_poll_ms)},
                           {"requires_poll_max", duration_text(c.requires_poll_max_ms)},
                           {"max_log", gpuq::format_size(c.max_log_bytes)}}},
      {"retention",
       toml::table{{"keep", c.retention_keep_ms == 0 ? std::string("forever")
                                                     : duration_text(c.retention_keep_ms)}}},
      {"preemption", toml::table{{"gap", int64_t{c.preemption_gap}},
                                 {"yield_grace", duration_text(c.yield_grace_ms)}}},
      {"cleanup", toml::table{{"poll", duration_text(c.cleanup_poll_ms)},
                              {"limit", duration_text(c.cleanup_limit_ms)}}},
      {"gpu", toml::table{{"probe_interval", duration_text(c.probe_interval_ms)},
                          {"foreign_repeat", duration_text(c.foreign_repeat_ms)},
                          {"foreign_memory_mib", c.foreign_memory_mib}}},
      {"watch", watch_table(c.watch)},
  };
  if (!c.hooks.empty()) root.insert("hook", hook_tables(c.hooks));
  std::ostringstream text;
  text << toml::toml_formatter(root, toml::format_flags::none);
  return text.str();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = gpuq::fuzz::as_text(data, size);
  auto config = gpuq::config::parse_config(text, kPath);
  if (!config) {
    check_error(text, config.error());
    return 0;
  }
  check_ranges(*config);
  std::string written = write_back(*config);
  auto again = gpuq::config::parse_config(written, kPath);
  FUZZ_CHECK(again.has_value(), "the config written back as\n{}\ndoes not read: {}", written,
             again ? "" : again.error().message);
  std::string rewritten = write_back(*again);
  FUZZ_CHECK(rewritten == written, "the config written back as\n{}\nreads as\n{}", written,
             rewritten);
  return 0;
}
