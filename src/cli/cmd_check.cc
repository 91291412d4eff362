// SPDX-License-Identifier: Apache-2.0
// `gpuq check [--json] [--timeout DUR] [--max-wait DUR] [--stale-after DUR]`: for cron, systemd
// timers and monitoring. Exit 0 when the daemon answers and its heartbeat is fresh and nothing
// needs a person; otherwise one line per problem and a non-zero status. Its one call to the
// daemon has a hard timeout, so a hung daemon (stopped, deadlocked) cannot hang the checker.
#include <fmt/format.h>

#include "base/duration.h"
#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

struct Problem {
  std::string kind;
  std::string message;
  Json detail = Json::object();
};

std::string ago(int64_t ms) { return format_duration(Millis(std::max<int64_t>(ms, 0))); }

Result<int64_t> duration_flag(const char* flag, const std::string& text) {
  auto parsed = parse_duration(text);
  if (!parsed) return fail(Code::kInvalidArgument, fmt::format("{}: {}", flag, parsed.error().message));
  if (parsed->count() <= 0) {
    return fail(Code::kInvalidArgument, fmt::format("{} must be longer than 0s", flag));
  }
  return parsed->count();
}

void check_heartbeat(const Json& health, int64_t stale_after_ms, std::vector<Problem>& out) {
  int64_t now = json_int(health, "now_ms").value_or(0);
  int64_t interval = json_int(health, "heartbeat_interval_ms").value_or(30'000);
  int64_t limit = stale_after_ms > 0 ? stale_after_ms : 3 * interval;
  auto beat = json_int(health, "heartbeat_at_ms");
  if (!beat) {
    out.push_back({"heartbeat_stale", "heartbeat missing: the daemon has never written one"});
    return;
  }
  int64_t age = now - *beat;
  if (age > limit) {
    out.push_back({"heartbeat_stale",
                   fmt::format("heartbeat stale: last written {} ago (written every {}, stale after "
                               "{}); the daemon's queue is stuck: see its log (daemon.log in its home, or "
                               "journalctl for a service)",
                               ago(age), ago(interval), ago(limit)),
                   {{"age_ms", age}}});
  }
}

// Commits failing (a full disk, an I/O error): nothing new starts until the store takes writes.
void check_store(const Json& health, std::vector<Problem>& out) {
  auto it = health.find("store_error");
  if (it == health.end() || !it->is_object()) return;
  const Json& trouble = *it;
  out.push_back({"store_error",
                 fmt::format("the store refuses writes for {} ({} failed commits; latest: {}); no job "
                             "starts until it takes them again: free space on the disk of the "
                             "daemon's home, then see its log",
                             ago(json_int(trouble, "for_ms").value_or(0)),
                             json_int(trouble, "failures").value_or(0), json_string(trouble, "error", "?")),
                 {{"failures", json_int(trouble, "failures").value_or(0)}}});
}

void check_gpus(const Json& health, std::vector<Problem>& out) {
  for (const auto& gpu : json_array(health, "gpus")) {
    std::string name = json_string(gpu, "name");
    std::string state = json_string(gpu, "state");
    if (state == "attention") {
      const Json& attention = gpu["attention"];
      out.push_back({"gpu_attention",
                     fmt::format("{} in attention since {}: {}; check its processes, then run "
                                 "gpuq release --attention {}",
                                 name, json_string(attention, "since"), json_string(attention, "why"), name),
                     {{"gpu", name}}});
    } else if (state == "foreign") {
      const Json& foreign = gpu["foreign"];
      std::string who;
      for (const auto& p : json_array(foreign, "processes")) {
        who += fmt::format("{}pid {} ({}, user {})", who.empty() ? "" : ", ", field_text(p, "pid"),
                           json_string(p, "command", "?"), json_string(p, "user", "?"));
      }
      if (who.empty()) who = json_string(foreign, "why");
      out.push_back({"gpu_foreign",
                     fmt::format("{} held by a process no job owns since {}: {}", name,
                                 json_string(foreign, "since"), who),
                     {{"gpu", name}}});
    }
  }
}

void check_waiting(const Json& health, int64_t max_wait_ms, std::vector<Problem>& out) {
  for (const auto& episode : json_array(health, "episodes")) {
    if (json_string(episode, "kind") != "queue.idle_with_work") continue;
    const Json& detail = episode["detail"];
    std::string first;
    const Json& heads = json_array(detail, "heads");
    if (!heads.empty()) {
      first = fmt::format("; first in line: job {} ({})", field_text(heads[0], "job"),
                          json_string(heads[0], "reason"));
    }
    out.push_back({"idle_with_work",
                   fmt::format("idle with work for {}: {}{}",
                               ago(json_int(episode, "for_ms").value_or(0)),
                               json_string(detail, "why"), first)});
  }
  for (const auto& wait : json_array(health, "waiting_on_conditions")) {
    int64_t waited = json_int(wait, "for_ms").value_or(0);
    if (waited <= max_wait_ms) continue;
    out.push_back({"condition_wait",
                   fmt::format("job {} waiting on a condition for {}: {}", field_text(wait, "job"),
                               ago(waited), json_string(wait, "why")),
                   {{"job", json_int(wait, "job").value_or(0)}, {"for_ms", waited}}});
  }
}

int finish(Context& ctx, const CheckOptions& options, const std::vector<Problem>& problems,
           const Json& health, int failure_status) {
  if (options.json) {
    Json list = Json::array();
    for (const auto& p : problems) {
      Json entry = {{"kind", p.kind}, {"message", p.message}};
      entry.update(p.detail);
      list.push_back(std::move(entry));
    }
    ctx.out() << Json{{"ok", problems.empty()}, {"problems", list}, {"daemon", health}}.dump() << '\n';
  } else if (problems.empty()) {
    ctx.out() << fmt::format("ok: daemon pid {} answers, heartbeat {} ago, {} active job(s)\n",
                             field_text(health, "pid"),
                             ago(json_int(health, "now_ms").value_or(0) -
                                 json_int(health, "heartbeat_at_ms").value_or(0)),
                             field_text(health, "active_jobs"));
  } else {
    for (const auto& p : problems) ctx.out() << p.message << '\n';
  }
  ctx.out().flush();
  return problems.empty() ? kExitOk : failure_status;
}

}  // namespace

int run_check(Context& ctx, const CheckOptions& options) {
  auto timeout = duration_flag("--timeout", options.timeout);
  auto max_wait = duration_flag("--max-wait", options.max_wait);
  if (!timeout) return ctx.report(kExitUsage, timeout.error().message);
  if (!max_wait) return ctx.report(kExitUsage, max_wait.error().message);
  int64_t stale_after = 0;
  if (!options.stale_after.empty()) {
    auto parsed = duration_flag("--stale-after", options.stale_after);
    if (!parsed) return ctx.report(kExitUsage, parsed.error().message);
    stale_after = *parsed;
  }
  auto health = ctx.client().get_json("/v1/health", Millis(*timeout));
  if (!health) {
    std::vector<Problem> problems = {
        {"unreachable", fmt::format("daemon unreachable: {}", health.error().message)}};
    return finish(ctx, options, problems, Json(nullptr), kExitNoDaemon);
  }
  std::vector<Problem> problems;
  check_heartbeat(*health, stale_after, problems);
  check_store(*health, problems);
  check_gpus(*health, problems);
  check_waiting(*health, *max_wait, problems);
  return finish(ctx, options, problems, *health, kExitFailed);
}

}  // namespace gpuq::cli
