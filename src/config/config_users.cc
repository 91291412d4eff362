// SPDX-License-Identifier: Apache-2.0
#include "config/config_users.h"

#include <fmt/format.h>

#include "base/duration.h"
#include "config/config_tables.h"
#include "config/config_text.h"

namespace gpuq::config {
namespace {

constexpr std::string_view kLimitKeys[] = {"max_gpus", "max_running", "max_queued"};

bool is_limit_key(std::string_view key) {
  for (std::string_view k : kLimitKeys) {
    if (k == key) return true;
  }
  return false;
}

// A login or group name as the system writes it: letters, digits, '.', '_', '-', not starting
// with '-'.
bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 32 || name.front() == '-') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// One limit (`table.key`, shown as `where.key`) into `value`.
Status read_limit(const toml::node& node, std::string_view path, std::string_view where,
                  std::string_view key, std::optional<int64_t>& value) {
  const auto* number = node.as_integer();
  if (number == nullptr || number->get() < 1 || number->get() > kMostUserLimit) {
    return error_at(path, node.source(),
                    fmt::format("{}.{} must be a whole number from 1 to {}, e.g. {} = 4; leave it "
                                "out for no limit",
                                where, key, kMostUserLimit, key));
  }
  value = number->get();
  return ok();
}

// A user's own limits: [users.NAME] with limit keys only.
Status read_user_limits(const toml::table& table, std::string_view path, std::string_view name,
                        UserLimits& limits) {
  std::string where = fmt::format("users.{}", name);
  for (auto&& [key, node] : table) {
    std::string_view k = key.str();
    if (k == "max_gpus") {
      if (auto st = read_limit(node, path, where, k, limits.max_gpus); !st) return st;
    } else if (k == "max_running") {
      if (auto st = read_limit(node, path, where, k, limits.max_running); !st) return st;
    } else if (k == "max_queued") {
      if (auto st = read_limit(node, path, where, k, limits.max_queued); !st) return st;
    } else {
      return error_at(path, key.source(),
                      fmt::format("unknown setting {}.{}; a user's table [{}] takes max_gpus, "
                                  "max_running and max_queued",
                                  where, k, where));
    }
  }
  return ok();
}

Status read_admins(const toml::node& node, std::string_view path, std::vector<std::string>& admins) {
  std::string_view help =
      "users.admins must be a list of login names, or \"@group\" for a group's members, e.g. "
      "admins = [\"ann\", \"@wheel\"]";
  const auto* array = node.as_array();
  if (array == nullptr) return error_at(path, node.source(), help);
  std::vector<std::string> names;
  for (const auto& item : *array) {
    const auto* text = item.as_string();
    if (text == nullptr) return error_at(path, item.source(), help);
    std::string_view name = text->get();
    std::string_view bare = name.starts_with('@') ? name.substr(1) : name;
    if (!valid_name(bare)) {
      return error_at(path, item.source(),
                      fmt::format("users.admins: \"{}\" is not a login or group name (letters, "
                                  "digits, '.', '_', '-'; \"@NAME\" for a group)",
                                  name));
    }
    names.emplace_back(name);
  }
  admins = std::move(names);
  return ok();
}

}  // namespace

Status read_users_table(const toml::table* table, std::string_view path, UsersConfig& users) {
  if (table == nullptr) return ok();
  for (auto&& [key, node] : *table) {
    std::string_view k = key.str();
    if (const auto* user = node.as_table()) {
      if (!valid_name(k)) {
        return error_at(path, key.source(),
                        fmt::format("[users.{}]: \"{}\" is not a login name; a user's table is "
                                    "[users.LOGIN] with that user's limits",
                                    k, k));
      }
      if (auto st = read_user_limits(*user, path, k, users.per_user[std::string(k)]); !st) return st;
    } else if (k == "group") {
      const auto* text = node.as_string();
      if (text == nullptr || !valid_name(text->get())) {
        return error_at(path, node.source(),
                        "users.group must be the name of a group (in quotes), e.g. group = \"gpuq\"");
      }
      users.group = text->get();
    } else if (k == "admins") {
      if (auto st = read_admins(node, path, users.admins); !st) return st;
    } else if (k == "fair_share") {
      const auto* flag = node.as_boolean();
      if (flag == nullptr) {
        return error_at(path, node.source(), "users.fair_share must be true or false (no quotes)");
      }
      users.fair_share = flag->get();
    } else if (k == "fair_share_half_life") {
      const auto* text = node.as_string();
      auto parsed = text ? parse_duration(text->get()) : Result<Millis>(fail(Code::kInvalidArgument, ""));
      if (!parsed || parsed->count() < 3'600'000 || parsed->count() > 365LL * 24 * 3'600'000) {
        return error_at(path, node.source(),
                        "users.fair_share_half_life must be a duration from 1h to 365d (in quotes), "
                        "e.g. fair_share_half_life = \"7d\"");
      }
      users.fair_share_half_life_ms = parsed->count();
    } else if (is_limit_key(k)) {
      std::optional<int64_t>& value = k == "max_gpus"      ? users.limits.max_gpus
                                      : k == "max_running" ? users.limits.max_running
                                                           : users.limits.max_queued;
      if (auto st = read_limit(node, path, "users", k, value); !st) return st;
    } else {
      return error_at(path, key.source(),
                      fmt::format("unknown setting users.{}; the settings of [users] are group, "
                                  "admins, fair_share, fair_share_half_life, max_gpus, "
                                  "max_running, max_queued, and [users.LOGIN] tables",
                                  k));
    }
  }
  return ok();
}

}  // namespace gpuq::config
