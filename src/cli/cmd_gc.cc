// SPDX-License-Identifier: Apache-2.0
// `gpuq gc [--dry-run] [--json]`: prune now what `[retention] keep` lets the daemon prune
// (finished jobs older than that, with their runs, run directories and events; never a job an
// unfinished job depends on), and say what went, in one line. The daemon does the work
// (POST /v1/gc); --dry-run asks what would go and removes nothing.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

int64_t count_field(const Json& answer, std::string_view key) {
  return json_int(answer, key).value_or(0);
}

// "jobs 12, 13, 14 and 1,201 more": the ids the daemon listed (it lists the first 100).
std::string ids_line(const Json& answer) {
  std::vector<std::string> ids;
  for (const auto& id : json_array(answer, "job_ids")) ids.push_back(json_text(id));
  if (ids.empty()) return "";
  int64_t more = count_field(answer, "jobs") - static_cast<int64_t>(ids.size());
  return fmt::format("{} {}{}\n", ids.size() == 1 ? "job" : "jobs", fmt::join(ids, ", "),
                     more > 0 ? fmt::format(" and {} more", format_count(more)) : "");
}

// The summary of docs/api.md's gc answer, e.g. "removed 1,204 finished jobs (older than 30d,
// finished before 2026-11-01T10:55:36.123Z): 1,310 runs, 9,871 events, 1,310 run directories,
// 2.1 GiB".
std::string summary(const Json& answer, bool dry_run) {
  int64_t jobs = count_field(answer, "jobs");
  int64_t events = count_field(answer, "events");
  int64_t dirs = count_field(answer, "run_dirs");
  std::string age = fmt::format("older than {}, finished before {}", json_string(answer, "keep", "?"),
                                json_string(answer, "cutoff", "?"));
  std::string verb = dry_run ? "would remove" : "removed";
  std::string out;
  if (json_string(answer, "keep") == "forever") {
    return "nothing is pruned: [retention] keep is \"forever\" in the daemon's config.toml\n";
  }
  if (jobs == 0 && events == 0 && dirs == 0) {
    out = fmt::format("nothing to remove (no finished job {})\n", age);
  } else {
    out = fmt::format("{} {} ({}): {}, {}, {}, {}\n", verb, count_of(jobs, "finished job", "finished jobs"),
                      age, count_of(count_field(answer, "runs"), "run", "runs"),
                      count_of(events, "event", "events"),
                      count_of(dirs, "run directory", "run directories"),
                      format_bytes(count_field(answer, "bytes")));
    if (dry_run) out += ids_line(answer);
  }
  if (auto hooks = answer.find("waiting_for_hooks"); hooks != answer.end() && hooks->is_boolean() && hooks->get<bool>()) {
    out += "kept finished jobs whose events an event hook has not delivered yet (gpuq hooks)\n";
  }
  if (int64_t kept = count_field(answer, "kept_for_dependents"); kept > 0) {
    out += fmt::format("kept {} that unfinished jobs depend on\n",
                       count_of(kept, "finished job", "finished jobs"));
  }
  return out;
}

}  // namespace

int run_gc(Context& ctx, const GcOptions& options) {
  Json request = {{"dry_run", options.dry_run}};
  auto response = ctx.client().post("/v1/gc", json_text(request), kGcTimeout);
  if (!response) return ctx.report(response.error());
  if (options.json) return print_body(ctx, response->body);
  auto answer = parse_json(response->body);
  if (!answer) return ctx.report(answer.error());
  ctx.out() << summary(*answer, options.dry_run);
  return kExitOk;
}

}  // namespace gpuq::cli
