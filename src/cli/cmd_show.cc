// `gpuq show ID|NAME`: one job in full, with a table of its runs.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

std::string exit_text(const Json& run) {
  if (auto code = json_int(run, "exit_code")) return std::to_string(*code);
  if (auto signal = json_int(run, "signal")) return fmt::format("signal {}", *signal);
  return "-";
}

std::string render_runs(const Json& job, int64_t now_ms, bool color) {
  const Json& runs = json_array(job, "runs");
  if (runs.empty()) return "no runs yet\n";
  Table table({"RUN", "GPUS", "STARTED", "DURATION", "EXIT", "OUTCOME"});
  for (const auto& run : runs) {
    std::string outcome = json_string(run, "outcome");
    table.add_row({field_text(run, "number"), gpu_list(run.contains("gpus") ? run["gpus"] : Json()),
                   field_text(run, "started_at"), run_duration(run, now_ms), exit_text(run),
                   Cell(outcome, state_style(outcome))});
  }
  return table.render(color);
}

std::string render_job(const Json& job, int64_t now_ms, bool color) {
  std::string state = json_string(job, "state");
  std::string submitted = field_text(job, "submitted_at");
  if (auto ms = json_int(job, "submitted_at_ms"); ms && *ms > 0) {
    submitted +=
        fmt::format(" ({} ago)", format_duration(Millis(std::max<int64_t>(0, now_ms - *ms))));
  }
  std::vector<std::pair<std::string, Cell>> lines = {
      {"id", field_text(job, "id")},
      {"name", name_or_dash(job)},
      {"state", Cell(state, state_style(state))},
  };
  if (!json_string(job, "reason").empty()) lines.emplace_back("reason", json_string(job, "reason"));
  lines.emplace_back("priority", field_text(job, "priority"));
  lines.emplace_back("gpus", field_text(job, "gpus_requested"));
  lines.emplace_back("command", field_text(job, "command"));
  lines.emplace_back("cwd", field_text(job, "cwd"));
  lines.emplace_back("submitted", submitted);
  lines.emplace_back("finished", field_text(job, "finished_at"));

  Table table({});
  for (auto& [key, value] : lines) table.add_row({key + ":", value});
  return table.render(color) + "\n" + render_runs(job, now_ms, color);
}

}  // namespace

int run_show(Context& ctx, const ShowOptions& options) {
  auto response = ctx.client().get(job_path(options.ref));
  if (!response) return ctx.report(response.error());
  if (options.json) return print_body(ctx, response->body);
  auto job = parse_json(response->body);
  if (!job) return ctx.report(job.error());
  ctx.out() << render_job(*job, ctx.io().wall_ms(), ctx.color());
  return kExitOk;
}

}  // namespace gpuq::cli
