// SPDX-License-Identifier: Apache-2.0
#include "config/config_hooks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>

#include "base/duration.h"
#include "config/config_text.h"

namespace gpuq::config {
namespace {

const std::vector<std::string_view> kHookKeys = {"name",    "events",    "command",  "url",
                                                 "timeout", "retry_min", "retry_max"};

constexpr std::string_view kHookExample =
    "e.g. [[hook]] with events = [\"job.*\"] and url = \"http://127.0.0.1:8080/gpuq\" below it";


// Reads one `[[hook]]` table; `number` (1-based) names it in messages until its name is known.
class HookReader {
 public:
  HookReader(std::string_view path, int number) : path_(path), number_(number) {}

  tl::unexpected<Error> error_at(const toml::source_region& where, std::string_view message) const {
    return config::error_at(path_, where, message);
  }

  Status read(const toml::table& table, HookConfig& hook) {
    for (auto&& [key, node] : table) {
      if (std::find(kHookKeys.begin(), kHookKeys.end(), key.str()) != kHookKeys.end()) continue;
      return error_at(key.source(), fmt::format("unknown setting {} of hook {}; the settings of a "
                                                "[[hook]] are {}",
                                                key.str(), number_, join(kHookKeys)));
    }
    if (auto status = read_target(table, hook); !status) return status;
    if (auto status = read_name(table, hook); !status) return status;
    if (auto status = read_events(table, hook); !status) return status;
    for (auto [key, value] :
         {std::pair{"timeout", &hook.timeout_ms}, std::pair{"retry_min", &hook.retry_min_ms},
          std::pair{"retry_max", &hook.retry_max_ms}}) {
      if (auto status = read_duration(table, key, *value); !status) return status;
    }
    if (hook.retry_max_ms < hook.retry_min_ms) {
      const toml::node* node = table.get("retry_max");
      if (node == nullptr) node = table.get("retry_min");
      return error_at(node->source(),
                      fmt::format("hook {}: retry_max ({}) is shorter than retry_min ({}); raise "
                                  "retry_max or lower retry_min",
                                  number_, format_duration(Millis(hook.retry_max_ms)),
                                  format_duration(Millis(hook.retry_min_ms))));
    }
    return ok();
  }

 private:
  // Exactly one of command and url.
  Status read_target(const toml::table& table, HookConfig& hook) const {
    const toml::node* command = table.get("command");
    const toml::node* url = table.get("url");
    if (command != nullptr && url != nullptr) {
      return error_at(url->source(),
                      fmt::format("hook {} has both command and url; a hook delivers one way: "
                                  "keep one and write another [[hook]] for the other",
                                  number_));
    }
    if (command == nullptr && url == nullptr) {
      return error_at(table.source(),
                      fmt::format("hook {} has neither command nor url; add command = \"...\" (run "
                                  "with the event on stdin) or url = \"http://...\" (POSTed the "
                                  "event), {}",
                                  number_, kHookExample));
    }
    const toml::node* node = command != nullptr ? command : url;
    std::string_view key = command != nullptr ? "command" : "url";
    const toml::value<std::string>* text = node->as_string();
    if (text == nullptr || text->get().empty()) {
      return error_at(node->source(),
                      fmt::format("hook {}: {} must be a non-empty text in quotes, "
                                  "e.g. {} = \"{}\"",
                                  number_, key, key,
                                  command != nullptr ? "notify-send \"$GPUQ_EVENT_KIND\""
                                                     : "http://127.0.0.1:8080/gpuq"));
    }
    if (command != nullptr) {
      hook.command = text->get();
      return ok();
    }
    const std::string& address = text->get();
    if (!address.starts_with("http://") && !address.starts_with("https://")) {
      return error_at(node->source(), fmt::format("hook {}: url \"{}\" must start with http:// or "
                                                  "https://",
                                                  number_, address));
    }
    hook.url = address;
    return ok();
  }

  // The name keys the stored cursor, so by default it derives from the target: reordering the
  // hooks in the file keeps each one's place in the event log. A digest rather than the text,
  // because names travel (gpuq hooks, /metrics labels) and URLs and commands carry tokens.
  Status read_name(const toml::table& table, HookConfig& hook) const {
    hook.name = default_hook_name(hook);
    const toml::node* node = table.get("name");
    if (node == nullptr) return ok();
    const toml::value<std::string>* text = node->as_string();
    if (text == nullptr || text->get().empty()) {
      return error_at(node->source(), fmt::format("hook {}: name must be a non-empty text in "
                                                  "quotes, e.g. name = \"slack\"",
                                                  number_));
    }
    hook.name = text->get();
    return ok();
  }

  Status read_events(const toml::table& table, HookConfig& hook) const {
    const toml::node* node = table.get("events");
    if (node == nullptr) return ok();
    std::string wrong = fmt::format(
        "hook {}: events must be a list of event kinds or globs in "
        "quotes, e.g. events = [\"job.*\", \"queue.idle_with_work\"]",
        number_);
    const toml::array* list = node->as_array();
    if (list == nullptr) return error_at(node->source(), wrong);
    if (list->empty()) {
      return error_at(node->source(), fmt::format("hook {}: events is empty, so the hook would "
                                                  "get nothing; list kinds, or remove events to "
                                                  "get every event",
                                                  number_));
    }
    hook.events.clear();
    for (const toml::node& item : *list) {
      const toml::value<std::string>* glob = item.as_string();
      if (glob == nullptr || glob->get().empty()) return error_at(item.source(), wrong);
      hook.events.push_back(glob->get());
    }
    return ok();
  }

  Status read_duration(const toml::table& table, std::string_view key, int64_t& value) const {
    const toml::node* node = table.get(key);
    if (node == nullptr) return ok();
    const toml::value<std::string>* text = node->as_string();
    if (text == nullptr) {
      return error_at(node->source(),
                      fmt::format("hook {}: {} must be a duration in quotes, e.g. "
                                  "{} = \"{}\"",
                                  number_, key, key, format_duration(Millis(value))));
    }
    auto duration = parse_duration(text->get());
    if (!duration) {
      return error_at(node->source(),
                      fmt::format("hook {}: {}: {}", number_, key, duration.error().message));
    }
    if (duration->count() <= 0 || duration->count() > kMaxDurationMs) {
      return error_at(node->source(), fmt::format("hook {}: {} = \"{}\" must be longer than 0s and "
                                                  "at most {}",
                                                  number_, key, text->get(), kMaxDurationText));
    }
    value = duration->count();
    return ok();
  }

  std::string_view path_;
  int number_;
};

}  // namespace

std::string default_hook_name(const HookConfig& hook) {
  const std::string& target = hook.command.empty() ? hook.url : hook.command;
  uint32_t digest = 2166136261u;  // FNV-1a: stable across builds, unlike std::hash
  for (unsigned char c : target) digest = (digest ^ c) * 16777619u;
  return fmt::format("{}-{:08x}", hook.command.empty() ? "url" : "command", digest);
}

Status read_hook_tables(const toml::node* node, std::string_view path,
                        std::vector<HookConfig>& hooks) {
  if (node == nullptr) return ok();
  const toml::array* tables = node->as_array();
  if (tables == nullptr || !tables->is_array_of_tables()) {
    return HookReader(path, 0).error_at(
        node->source(), fmt::format("hook must be written [[hook]], with two brackets: one table "
                                    "per hook, {}",
                                    kHookExample));
  }
  std::map<std::string, int> numbers;  // name → the hook (1-based) that has it
  int number = 0;
  for (const toml::node& item : *tables) {
    ++number;
    HookReader reader(path, number);
    HookConfig hook;
    if (auto status = reader.read(*item.as_table(), hook); !status) return status;
    auto [it, added] = numbers.emplace(hook.name, number);
    if (!added) {
      const toml::table& table = *item.as_table();
      const toml::node* blame = table.get("name");
      if (blame == nullptr) blame = table.get(hook.command.empty() ? "url" : "command");
      return reader.error_at(blame->source(),
                             fmt::format("hooks {} and {} are both named \"{}\"; the name keys the "
                                         "hook's place in the event log, so give each a distinct "
                                         "name = \"...\"",
                                         it->second, number, hook.name));
    }
    hooks.push_back(std::move(hook));
  }
  return ok();
}

}  // namespace gpuq::config
