// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "base/duration.h"
#include "base/size.h"
#include "config/config_fleet.h"
#include "config/config_hooks.h"
#include "config/config_http.h"
#include "config/config_cgroup.h"
#include "config/config_containers.h"
#include "config/config_users.h"
#include "config/config_sweeps.h"
#include "config/config_tables.h"
#include "config/config_text.h"

namespace gpuq::config {
namespace {

const std::vector<std::string_view> kLaneKeys = {"capacity", "excludes"};
const std::vector<std::string_view> kPolicies = {"fifo", "priority", "backfill"};

// Reads one parsed document into a Config, checking every table and key. Errors name the
// position of the offending key or value.
class ConfigReader {
 public:
  explicit ConfigReader(std::string_view path) : path_(path) {}

  Result<Config> read(const toml::table& root) {
    Config config;
    if (auto status = check_top_level(root); !status) return tl::unexpected(status.error());
    if (auto status = read_lanes(root, config.lanes); !status) return tl::unexpected(status.error());
    if (auto status = read_scheduler(root, config); !status) return tl::unexpected(status.error());
    if (auto status = read_retries(root, config); !status) return tl::unexpected(status.error());
    if (auto status = read_runs(root, config); !status) return tl::unexpected(status.error());
    if (auto status = read_retention(root, config); !status) return tl::unexpected(status.error());
    if (auto status = read_gpu_truth(root, config); !status) return tl::unexpected(status.error());
    if (auto status = read_watch(root, config.watch); !status) return tl::unexpected(status.error());
    if (auto status = read_hook_tables(root.get(kHookKey), path_, config.hooks); !status) {
      return tl::unexpected(status.error());
    }
    for (std::string_view name : {"fleet", "http", "cgroup", "sweeps", "containers"}) {
      const toml::table* table = sub_table(root, name);
      if (auto status = table ? check_keys(*table, spec_named(name)) : ok(); !status) return tl::unexpected(status.error());
    }
    auto fleet = read_fleet_table(sub_table(root, "fleet"), path_, config.fleet);
    auto http = fleet ? read_http_table(sub_table(root, "http"), path_, config.http) : fleet;
    if (auto status = http ? read_cgroup_table(sub_table(root, "cgroup"), path_, config.cgroup_root) : http; !status) {
      return tl::unexpected(status.error());
    }
    auto sweeps = read_sweeps_table(sub_table(root, "sweeps"), path_, config.sweeps_max_elements);
    if (!sweeps) return tl::unexpected(sweeps.error());
    auto containers = read_containers_table(sub_table(root, "containers"), path_, config.containers);
    if (!containers) return tl::unexpected(containers.error());
    auto users = read_users_table(sub_table(root, "users"), path_, config.users);
    if (!users) return tl::unexpected(users.error());
    return config;
  }

  tl::unexpected<Error> error_at(const toml::source_region& where, std::string_view message) const {
    return config::error_at(path_, where, message);
  }

 private:
  Status check_top_level(const toml::table& root) const {
    for (auto&& [key, node] : root) {
      std::string_view name = key.str();
      if (const TableSpec* spec = table_with_key(name)) {
        return error_at(key.source(), fmt::format("{} belongs in a table: write it under [{}]",
                                                  name, spec->name));
      }
      if (contains(kLaneKeys, name)) {
        return error_at(key.source(), fmt::format("{} belongs to a lane: write it under "
                                                  "[lanes.NAME]",
                                                  name));
      }
      if (name == kHookKey) continue;  // read_hook_tables checks its shape
      bool known =
          name == "lanes" || std::any_of(table_specs().begin(), table_specs().end(),
                                         [&](const TableSpec& s) { return s.name == name; });
      if (known) {
        if (!node.is_table()) {
          return error_at(key.source(),
                          fmt::format("{} must be a table: write [{}] on a line of its own and "
                                      "its settings below it",
                                      name, name == "lanes" ? "lanes.NAME" : name));
        }
        continue;
      }
      return error_at(key.source(),
                      node.is_table()
                          ? fmt::format("unknown table [{}]; the tables are {}", name, kKnownTables)
                          : fmt::format("unknown setting {}; settings belong in the tables {}",
                                        name, kKnownTables));
    }
    return ok();
  }

  Status check_keys(const toml::table& table, const TableSpec& spec) const {
    for (auto&& [key, node] : table) {
      std::string_view name = key.str();
      if (contains(spec.keys, name)) continue;
      const TableSpec* home = table_with_key(name);
      if (home != nullptr) {
        return error_at(key.source(), fmt::format("{} is not a setting of [{}]; move it under [{}]",
                                                  name, spec.name, home->name));
      }
      return error_at(key.source(),
                      fmt::format("unknown setting {}.{}; the settings of [{}] are {}", spec.name,
                                  name, spec.name, join(spec.keys)));
    }
    return ok();
  }

  static const toml::table* sub_table(const toml::table& root, std::string_view name) {
    const toml::node* node = root.get(name);
    return node == nullptr ? nullptr : node->as_table();
  }

  // Reads `key` of `table` (shown as `name.key`) as a duration string into `value`.
  Status read_duration(const toml::table& table, std::string_view name, std::string_view key,
                       int64_t& value) {
    const toml::node* node = table.get(key);
    if (node == nullptr) return ok();
    std::string setting = fmt::format("{}.{}", name, key);
    const toml::value<std::string>* text = node->as_string();
    if (text == nullptr) {
      return error_at(
          node->source(),
          fmt::format("{} must be a duration in quotes, e.g. {} = \"10s\"", setting, key));
    }
    auto duration = parse_duration(text->get());
    if (!duration) return error_at(node->source(), setting + ": " + duration.error().message);
    if (duration->count() > kMaxDurationMs) {
      return error_at(node->source(), fmt::format("{} = \"{}\" is too long; use at most {}",
                                                  setting, text->get(), kMaxDurationText));
    }
    value = duration->count();
    where_[setting] = node->source();
    return ok();
  }

  // The position to blame when two settings contradict each other: the later one if the file
  // sets it, else the earlier (one of them is in the file, since the defaults agree).
  toml::source_region blame(std::string_view later, std::string_view earlier) const {
    auto it = where_.find(std::string(later));
    if (it == where_.end()) it = where_.find(std::string(earlier));
    return it == where_.end() ? toml::source_region{} : it->second;
  }

  Status read_scheduler(const toml::table& root, Config& config) {
    const toml::table* table = sub_table(root, "scheduler");
    if (table == nullptr) return ok();
    if (auto status = check_keys(*table, spec_named("scheduler")); !status) return status;
    if (const toml::node* node = table->get("policy")) {
      const toml::value<std::string>* policy = node->as_string();
      if (policy == nullptr || !contains(kPolicies, policy->get())) {
        return error_at(node->source(),
                        fmt::format("scheduler.policy must be one of \"fifo\", \"priority\", "
                                    "\"backfill\" (in quotes)"));
      }
      config.policy = policy->get();
    }
    return read_duration(*table, "scheduler", "backfill_unknown_limit",
                         config.backfill_unknown_limit_ms);
  }

  Status read_retries(const toml::table& root, Config& config) {
    const toml::table* table = sub_table(root, "retries");
    if (table == nullptr) return ok();
    if (auto status = check_keys(*table, spec_named("retries")); !status) return status;
    if (auto status = read_duration(*table, "retries", "delay", config.retry_delay_ms); !status) {
      return status;
    }
    if (const toml::node* node = table->get("backoff")) {
      std::optional<double> backoff;
      if (const auto* real = node->as_floating_point()) backoff = real->get();
      if (const auto* whole = node->as_integer()) backoff = static_cast<double>(whole->get());
      if (!backoff || !std::isfinite(*backoff) || *backoff < 1.0) {
        return error_at(node->source(),
                        "retries.backoff must be a number >= 1 (the factor each retry's delay "
                        "grows by; 1 keeps it constant), e.g. backoff = 2.0");
      }
      config.retry_backoff = *backoff;
    }
    if (auto status = read_duration(*table, "retries", "max_delay", config.retry_max_delay_ms);
        !status) {
      return status;
    }
    if (config.retry_max_delay_ms < config.retry_delay_ms) {
      return error_at(blame("retries.max_delay", "retries.delay"),
                      fmt::format("retries.max_delay ({}) is shorter than retries.delay ({}); "
                                  "raise max_delay or lower delay",
                                  format_duration(Millis(config.retry_max_delay_ms)),
                                  format_duration(Millis(config.retry_delay_ms))));
    }
    return ok();
  }

  // [retention] keep: a duration from a minute to 100 years, or "forever".
  Status read_retention(const toml::table& root, Config& config) {
    const toml::table* table = sub_table(root, "retention");
    if (table == nullptr) return ok();
    if (auto status = check_keys(*table, spec_named("retention")); !status) return status;
    const toml::node* node = table->get("keep");
    if (node == nullptr) return ok();
    const toml::value<std::string>* text = node->as_string();
    std::string_view help =
        "retention.keep must be a duration in quotes from \"1m\" to \"36500d\", or \"forever\" to "
        "keep finished jobs for good, e.g. keep = \"30d\"";
    if (text == nullptr) return error_at(node->source(), std::string(help));
    if (text->get() == "forever") {
      config.retention_keep_ms = 0;
      return ok();
    }
    auto duration = parse_duration(text->get());
    if (!duration || duration->count() < 60'000) {
      return error_at(node->source(),
                      fmt::format("retention.keep = \"{}\": {}", text->get(), help.substr(15)));
    }
    config.retention_keep_ms = duration->count();
    return ok();
  }

  // [runs] max_log: a size (base/size.h); "0" turns the cap off.
  Status read_max_log(const toml::table& table, Config& config) {
    const toml::node* node = table.get("max_log");
    if (node == nullptr) return ok();
    const toml::value<std::string>* text = node->as_string();
    if (text == nullptr) {
      return error_at(node->source(), "runs.max_log must be a size in quotes, e.g. max_log = "
                                      "\"2GiB\" (\"0\" for no cap)");
    }
    auto size = parse_size(text->get());
    if (!size) return error_at(node->source(), "runs.max_log: " + size.error().message);
    if (*size != 0 && *size < 4096) {
      return error_at(node->source(), fmt::format("runs.max_log = \"{}\" is too small to hold a "
                                                  "line of output; use at least \"4KiB\", or \"0\" "
                                                  "for no cap",
                                                  text->get()));
    }
    config.max_log_bytes = *size;
    return ok();
  }

  Status read_runs(const toml::table& root, Config& config) {
    const toml::table* table = sub_table(root, "runs");
    if (table == nullptr) return ok();
    if (auto status = check_keys(*table, spec_named("runs")); !status) return status;
    if (auto status = read_max_log(*table, config); !status) return status;
    int64_t max_not_started = config.max_not_started;
    if (auto status = read_integer(*table, "runs", "max_not_started", 1, kMostNotStarted,
                                   "how many runs in a row may never begin before the job is held",
                                   max_not_started);
        !status) {
      return status;
    }
    config.max_not_started = static_cast<int>(max_not_started);
    for (auto [key, value] : {std::pair{"kill_grace", &config.kill_grace_ms},
                              std::pair{"requires_timeout", &config.requires_timeout_ms},
                              std::pair{"requires_poll", &config.requires_poll_ms},
                              std::pair{"requires_poll_max", &config.requires_poll_max_ms}}) {
      if (auto status = read_duration(*table, "runs", key, *value); !status) return status;
    }
    for (auto [key, value, fallback] :
         {std::tuple{"requires_timeout", config.requires_timeout_ms, Config{}.requires_timeout_ms},
          std::tuple{"requires_poll", config.requires_poll_ms, Config{}.requires_poll_ms}}) {
      if (value == 0) {
        return error_at(blame(fmt::format("runs.{}", key), {}),
                        fmt::format("runs.{} must be longer than 0s, e.g. {} = \"{}\"", key, key,
                                    format_duration(Millis(fallback))));
      }
    }
    if (config.requires_poll_max_ms < config.requires_poll_ms) {
      return error_at(blame("runs.requires_poll_max", "runs.requires_poll"),
                      fmt::format("runs.requires_poll_max ({}) is shorter than runs.requires_poll "
                                  "({}); raise requires_poll_max or lower requires_poll",
                                  format_duration(Millis(config.requires_poll_max_ms)),
                                  format_duration(Millis(config.requires_poll_ms))));
    }
    return ok();
  }

  // Reads `key` of `table` (shown as `name.key`) as an integer in [min, max] into `value`.
  Status read_integer(const toml::table& table, std::string_view name, std::string_view key,
                      int64_t min, int64_t max, std::string_view meaning, int64_t& value) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) return ok();
    const auto* number = node->as_integer();
    if (number == nullptr || number->get() < min || number->get() > max) {
      return error_at(node->source(), fmt::format("{}.{} must be a whole number from {} to {} ({}), "
                                                  "e.g. {} = {}",
                                                  name, key, min, max, meaning, key, value));
    }
    value = number->get();
    return ok();
  }

  // Reads every duration of `keys` in table `name`; each must be longer than 0s.
  Status read_positive_durations(const toml::table& table, std::string_view name,
                                 std::initializer_list<std::pair<const char*, int64_t*>> keys) {
    for (auto [key, value] : keys) {
      int64_t fallback = *value;
      if (auto status = read_duration(table, name, key, *value); !status) return status;
      if (*value == 0) {
        return error_at(blame(fmt::format("{}.{}", name, key), {}),
                        fmt::format("{}.{} must be longer than 0s, e.g. {} = \"{}\"", name, key,
                                    key, format_duration(Millis(fallback))));
      }
    }
    return ok();
  }

  // [watch]: the watchers' limits; 0s turns a watcher off.
  Status read_watch(const toml::table& root, WatchConfig& watch) {
    const toml::table* table = sub_table(root, "watch");
    if (table == nullptr) return ok();
    if (auto status = check_keys(*table, spec_named("watch")); !status) return status;
    if (auto status = read_positive_durations(*table, "watch",
                                              {{"interval", &watch.interval_ms},
                                               {"repeat", &watch.repeat_ms},
                                               {"heartbeat", &watch.heartbeat_ms}});
        !status) {
      return status;
    }
    for (auto [key, value] : {std::pair{"requires_warn", &watch.requires_warn_ms},
                              std::pair{"quiet", &watch.quiet_ms},
                              std::pair{"gpu_idle", &watch.gpu_idle_ms},
                              std::pair{"idle_with_work", &watch.idle_with_work_ms},
                              std::pair{"empty", &watch.empty_ms}}) {
      if (auto status = read_duration(*table, "watch", key, *value); !status) return status;
    }
    if (auto status = read_integer(*table, "watch", "gpu_idle_utilization", 0, 100,
                                   "the percent at or below which a GPU counts as idle",
                                   watch.gpu_idle_utilization);
        !status) {
      return status;
    }
    if (const toml::node* node = table->get("overdue_factor")) {
      std::optional<double> factor;
      if (const auto* real = node->as_floating_point()) factor = real->get();
      if (const auto* whole = node->as_integer()) factor = static_cast<double>(whole->get());
      if (!factor || !std::isfinite(*factor) || (*factor != 0 && *factor < 1.0) || *factor > 1000) {
        return error_at(node->source(),
                        "watch.overdue_factor must be 0 (off) or a number from 1 to 1000 (a run "
                        "is overdue past its estimate times this), e.g. overdue_factor = 2.0");
      }
      watch.overdue_factor = *factor;
    }
    return ok();
  }

  // [preemption], [cleanup] and [gpu]: what keeps the GPUs honest.
  Status read_gpu_truth(const toml::table& root, Config& config) {
    if (const toml::table* table = sub_table(root, "preemption")) {
      if (auto status = check_keys(*table, spec_named("preemption")); !status) return status;
      int64_t gap = config.preemption_gap;
      if (auto status = read_integer(*table, "preemption", "gap", 1, 1000,
                                     "how much better a priority must be to preempt", gap);
          !status) {
        return status;
      }
      config.preemption_gap = static_cast<int>(gap);
      if (auto status = read_positive_durations(*table, "preemption",
                                                {{"yield_grace", &config.yield_grace_ms}});
          !status) {
        return status;
      }
    }
    if (const toml::table* table = sub_table(root, "cleanup")) {
      if (auto status = check_keys(*table, spec_named("cleanup")); !status) return status;
      if (auto status = read_positive_durations(
              *table, "cleanup", {{"poll", &config.cleanup_poll_ms}, {"limit", &config.cleanup_limit_ms}});
          !status) {
        return status;
      }
      if (config.cleanup_limit_ms <= config.cleanup_poll_ms) {
        return error_at(blame("cleanup.limit", "cleanup.poll"),
                        fmt::format("cleanup.limit ({}) must be longer than cleanup.poll ({}): "
                                    "a cleanup needs two scans a poll apart",
                                    format_duration(Millis(config.cleanup_limit_ms)),
                                    format_duration(Millis(config.cleanup_poll_ms))));
      }
    }
    if (const toml::table* table = sub_table(root, "gpu")) {
      if (auto status = check_keys(*table, spec_named("gpu")); !status) return status;
      if (auto status = read_positive_durations(*table, "gpu",
                                                {{"probe_interval", &config.probe_interval_ms},
                                                 {"foreign_repeat", &config.foreign_repeat_ms}});
          !status) {
        return status;
      }
      if (auto status = read_integer(*table, "gpu", "foreign_memory_mib", 0, 1'000'000'000,
                                     "used memory with no process listed that makes a GPU "
                                     "foreign; 0 turns the rule off",
                                     config.foreign_memory_mib);
          !status) {
        return status;
      }
    }
    return ok();
  }

  Status check_lane_name(const toml::key& key) const {
    std::string_view name = key.str();
    if (!is_lane_name(name)) {
      return error_at(key.source(),
                      fmt::format("lane name \"{}\" may use only a-z, 0-9, _ and -, e.g. "
                                  "[lanes.net]",
                                  name));
    }
    if (name == kGpuLane) {
      return error_at(key.source(),
                      "the lane name gpu is reserved: excludes = [\"gpu\"] means any job holding "
                      "GPUs; choose another name");
    }
    if (is_gpu_name(name)) {
      return error_at(
          key.source(),
          fmt::format("the lane name {} is the name of a GPU; choose another name", name));
    }
    return ok();
  }

  Status read_lane(const toml::key& key, const toml::table& table, LaneConfig& lane) const {
    lane.name = std::string(key.str());
    for (auto&& [setting, node] : table) {
      if (contains(kLaneKeys, setting.str())) continue;
      return error_at(setting.source(),
                      fmt::format("unknown setting lanes.{}.{}; the settings of a lane are {}",
                                  lane.name, setting.str(), join(kLaneKeys)));
    }
    if (const toml::node* node = table.get("capacity")) {
      const toml::value<int64_t>* capacity = node->as_integer();
      if (capacity == nullptr || capacity->get() < 1 || capacity->get() > kMaxLaneCapacity) {
        return error_at(node->source(),
                        fmt::format("lanes.{}.capacity must be a whole number from 1 to {} (how "
                                    "many jobs may hold the lane at once), e.g. capacity = 1",
                                    lane.name, kMaxLaneCapacity));
      }
      lane.capacity = static_cast<int>(capacity->get());
    }
    return ok();
  }

  // Checked once every lane is known, since a lane may exclude one defined after it.
  Status read_excludes(const toml::table& table, const std::set<std::string, std::less<>>& names,
                       LaneConfig& lane) const {
    const toml::node* node = table.get("excludes");
    if (node == nullptr) return ok();
    std::string others = "\"gpu\"";
    for (const std::string& name : names) {
      if (name != lane.name) others += ", \"" + name + "\"";
    }
    const toml::array* list = node->as_array();
    if (list == nullptr) {
      return error_at(node->source(),
                      fmt::format("lanes.{}.excludes must be a list of lane names in quotes, e.g. "
                                  "excludes = [\"gpu\"]",
                                  lane.name));
    }
    for (const toml::node& item : *list) {
      const toml::value<std::string>* other = item.as_string();
      if (other == nullptr) {
        return error_at(
            item.source(),
            fmt::format("lanes.{}.excludes holds lane names in quotes; the names are {}", lane.name,
                        others));
      }
      const std::string& name = other->get();
      if (name == lane.name) {
        return error_at(item.source(),
                        fmt::format("lane {} cannot exclude itself; remove \"{}\" (use capacity "
                                    "to limit how many of its jobs run at once)",
                                    lane.name, name));
      }
      if (name != kGpuLane && names.count(name) == 0) {
        return error_at(item.source(),
                        fmt::format("lanes.{}.excludes names \"{}\", which is no lane; define "
                                    "[lanes.{}] or use one of {}",
                                    lane.name, name, is_lane_name(name) ? name : "NAME", others));
      }
      if (std::find(lane.excludes.begin(), lane.excludes.end(), name) != lane.excludes.end()) {
        return error_at(
            item.source(),
            fmt::format("lanes.{}.excludes names \"{}\" twice; remove one", lane.name, name));
      }
      lane.excludes.push_back(name);
    }
    return ok();
  }

  Status read_lanes(const toml::table& root, std::vector<LaneConfig>& lanes) const {
    const toml::table* table = sub_table(root, "lanes");
    if (table == nullptr) return ok();
    std::set<std::string, std::less<>> names;
    for (auto&& [key, node] : *table) {
      if (!node.is_table()) {
        return error_at(key.source(),
                        fmt::format("lanes.{} must be a table: a lane is written as [lanes.NAME] "
                                    "with capacity and excludes below it",
                                    key.str()));
      }
      if (auto status = check_lane_name(key); !status) return status;
      LaneConfig lane;
      if (auto status = read_lane(key, *node.as_table(), lane); !status) return status;
      names.insert(lane.name);
      lanes.push_back(std::move(lane));
    }
    for (LaneConfig& lane : lanes) {
      const toml::table& lane_table = *table->get(lane.name)->as_table();
      if (auto status = read_excludes(lane_table, names, lane); !status) return status;
    }
    std::sort(lanes.begin(), lanes.end(),
              [](const LaneConfig& a, const LaneConfig& b) { return a.name < b.name; });
    return ok();
  }

  std::string path_;
  // Where each duration setting was written ("runs.requires_poll"), to blame contradictions.
  std::map<std::string, toml::source_region> where_;
};

}  // namespace

Result<Config> parse_config(std::string_view text, std::string_view name) {
  ConfigReader reader(name);
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& error) {
    return reader.error_at(error.source(),
                           fmt::format("not valid TOML: {}; {}see https://toml.io",
                                       error.description(), quoting_hint(error.description())));
  }
  return reader.read(root);
}

Result<Config> load_config(const std::string& path, IfMissing if_missing) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) {
    if (errno == ENOENT && if_missing == IfMissing::kDefaults) return Config{};
    return errno_error(fmt::format("cannot read the config file {}", path));
  }
  std::string text;
  char buffer[1 << 14];
  size_t count = 0;
  while ((count = std::fread(buffer, 1, sizeof buffer, file.get())) > 0) text.append(buffer, count);
  if (std::ferror(file.get())) return errno_error("cannot read the config file " + path);
  return parse_config(text, path);
}

}  // namespace gpuq::config
