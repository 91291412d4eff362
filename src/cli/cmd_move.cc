// SPDX-License-Identifier: Apache-2.0
// `gpuq move ID (--before ID | --after ID | --top | --bottom | --priority P)`: changes where a
// pending job stands in the queue (POST /v1/jobs/{ref}/move), or, for an array's name, where
// its waiting elements stand, as one block (POST /v1/arrays/{ref}/move).
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"
#include "model/job.h"

namespace gpuq::cli {

Outcome<Json> build_move_request(const MoveOptions& options) {
  int given = !options.before.empty() + !options.after.empty() + options.top + options.bottom +
              !options.priority.empty();
  if (given != 1) {
    return cli_fail(kExitUsage,
                    fmt::format("move: give exactly one of --before ID, --after ID, --top, "
                                "--bottom or --priority P ({} given)",
                                given));
  }
  if (!options.before.empty()) return Json{{"before", options.before}};
  if (!options.after.empty()) return Json{{"after", options.after}};
  if (options.top) return Json{{"top", true}};
  if (options.bottom) return Json{{"bottom", true}};
  auto priority = parse_priority(options.priority);
  if (!priority) return cli_fail(kExitUsage, "--priority: " + priority.error().message);
  return Json{{"priority", *priority}};
}

int run_move(Context& ctx, const MoveOptions& options) {
  auto body = build_move_request(options);
  if (!body) return ctx.report(body.error());
  auto job = ctx.client().post_json(job_path(options.ref) + "/move", *body);
  if (!job && job.error().code == "not_found") {
    // An array or grid (docs/sweeps.md): its waiting elements move as one block.
    auto moved = ctx.client().post_json("/v1/arrays/" + percent_encode(options.ref) + "/move", *body);
    if (moved) {
      if (options.json) return print_json(ctx, *moved);
      const Json& ids = json_array(*moved, "moved");
      ctx.out() << fmt::format("moved array {}: {} waiting element{}", options.ref, ids.size(),
                               ids.size() == 1 ? "" : "s")
                << '\n';
      return kExitOk;
    }
    if (moved.error().code != "not_found" || moved.error().message.rfind("no array", 0) != 0) {
      if (moved.error().exit_code == kExitNoDaemon) return ctx.report(moved.error());
      return ctx.report(kExitFailed, fmt::format("cannot move array {}: {}", options.ref,
                                                 moved.error().message));
    }
  }
  if (!job) {
    if (job.error().exit_code == kExitNoDaemon) return ctx.report(job.error());
    return ctx.report(kExitFailed,
                      fmt::format("cannot move job {}: {}", options.ref, job.error().message));
  }
  if (options.json) return print_json(ctx, *job);
  ctx.out() << "moved job " << field_text(*job, "id") << " (priority "
            << field_text(*job, "priority") << ")\n";
  return kExitOk;
}

}  // namespace gpuq::cli
