// SPDX-License-Identifier: Apache-2.0
// `gpuq hooks`: where each event hook of the daemon stands: its cursor in the event log, how
// far behind it is, and its last error (docs/hooks.md).
#include <fmt/format.h>

#include "base/duration.h"
#include "base/time.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/table.h"

namespace gpuq::cli {
namespace {

constexpr size_t kNameWidth = 32;
constexpr size_t kTargetWidth = 48;
constexpr size_t kEventsWidth = 40;
constexpr size_t kErrorWidth = 72;

std::string target_text(const Json& hook) {
  std::string target = json_string(hook, "target");
  if (json_string(hook, "type") == "command") target = "command: " + target;
  return truncate(target, kTargetWidth);
}

std::string events_text(const Json& hook) {
  std::string text;
  for (const auto& glob : json_array(hook, "events")) {
    if (!text.empty()) text += ",";
    text += glob.is_string() ? glob.get<std::string>() : glob.dump();
  }
  return text.empty() ? "-" : truncate(text, kEventsWidth);
}

// The last error with its age ("2m ago: POST answered HTTP 500"); red while the hook is
// failing now (retrying the same event), plain when a later delivery succeeded.
Cell error_cell(const Json& hook, int64_t now_ms) {
  std::string error = json_string(hook, "last_error");
  if (error.empty()) return Cell("-");
  std::string when;
  if (auto at = parse_rfc3339(json_string(hook, "last_error_at")); at && *at <= now_ms) {
    when = format_duration(Millis(now_ms - *at)) + " ago: ";
  }
  int64_t failures = json_int(hook, "failures").value_or(0);
  if (failures > 0) {
    return Cell(
        truncate(fmt::format("failing ({} tries), {}{}", failures, when, error), kErrorWidth),
        Style::kRed);
  }
  return Cell(truncate(when + error, kErrorWidth));
}

}  // namespace

int run_hooks(Context& ctx, const HooksOptions& options) {
  auto response = ctx.client().get("/v1/hooks");
  if (!response) return ctx.report(response.error());
  if (options.json) return print_body(ctx, response->body);
  auto answer = parse_json(response->body);
  if (!answer) return ctx.report(answer.error());
  const Json& hooks = json_array(*answer, "hooks");
  if (hooks.empty()) {
    ctx.out() << "no hooks; add [[hook]] tables to config.toml (docs/hooks.md)\n";
    return kExitOk;
  }
  int64_t now_ms = ctx.io().wall_ms();
  Table table({"NAME", "TARGET", "EVENTS", "CURSOR", "LAG", "LAST ERROR"});
  for (const auto& hook : hooks) {
    int64_t lag = json_int(hook, "lag").value_or(0);
    table.add_row({truncate(json_string(hook, "name"), kNameWidth), target_text(hook),
                   events_text(hook), field_text(hook, "cursor"),
                   Cell(std::to_string(lag), lag > 0 ? Style::kYellow : Style::kPlain),
                   error_cell(hook, now_ms)});
  }
  ctx.out() << table.render(ctx.color());
  return kExitOk;
}

}  // namespace gpuq::cli
