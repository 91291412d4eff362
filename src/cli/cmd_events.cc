// SPDX-License-Identifier: Apache-2.0
// `gpuq events [--json] [--follow] [--after SEQ]`: the daemon's event log from a cursor.
// Without --follow it prints what is there and stops; with it, it long-polls for ever.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

std::string event_line(const Json& event) {
  std::string line = fmt::format("{} {} {}", field_text(event, "seq"), field_text(event, "time"),
                                 field_text(event, "kind"));
  if (auto job = json_int(event, "job")) line += fmt::format(" job={}", *job);
  if (auto run = json_int(event, "run")) line += fmt::format(" run={}", *run);
  if (auto it = event.find("data"); it != event.end() && !it->is_null() && !it->empty()) {
    line += ' ';
    line += json_text(*it);
  }
  return line;
}

}  // namespace

int run_events(Context& ctx, const EventsOptions& options) {
  if (options.after < 0) return ctx.report(kExitUsage, "--after must be 0 or more");
  int64_t cursor = options.after;
  bool caught_up = false;  // long-poll only once the backlog is printed
  for (;;) {
    std::string target = fmt::format("/v1/events?after={}", cursor);
    Millis timeout = kRequestTimeout;
    if (caught_up) {
      target += fmt::format("&wait_ms={}", kEventsFollowWait.count());
      timeout = kEventsFollowWait + kLongPollSlack;
    }
    auto answer = ctx.client().get_json(target, timeout);
    if (!answer) return ctx.report(answer.error());
    const Json& events = json_array(*answer, "events");
    int64_t before = cursor;
    for (const auto& event : events) {
      ctx.out() << (options.json ? json_text(event) : event_line(event)) << '\n';
      cursor = std::max(cursor, json_int(event, "seq").value_or(cursor));
    }
    ctx.out().flush();
    if (!events.empty() && cursor == before) {
      return ctx.report(kExitFailed, "the daemon's events do not advance (no seq after " +
                                         std::to_string(before) + ")");
    }
    if (events.empty()) {
      if (!options.follow) return kExitOk;
      caught_up = true;
    }
  }
}

}  // namespace gpuq::cli
