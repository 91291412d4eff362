// `gpuq status`: the GPUs and the queue in one screen. Shows every job that is not finished
// and the latest finished ones (all of them with --all).
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

constexpr size_t kCommandColumns = 60;

bool is_finished(const Json& job) {
  std::string state = json_string(job, "state");
  return state == "succeeded" || state == "failed" || state == "cancelled" || state == "skipped";
}

std::string render_gpus(const Json& answer, bool color) {
  const Json& resources = json_array(answer, "resources");
  if (resources.empty()) {
    std::string mode = json_string(answer, "gpu_mode");
    return fmt::format("no GPUs{}\n", mode.empty() ? "" : " (mode " + mode + ")");
  }
  Table table({"NAME", "INDEX", "STATE", "JOB", "MODEL"});
  for (const auto& r : resources) {
    std::string state = json_string(r, "state");
    table.add_row({field_text(r, "name"), field_text(r, "index"),
                   Cell(state, state == "free" ? Style::kGreen : Style::kPlain),
                   field_text(r, "job"), field_text(r, "model")});
  }
  return table.render(color);
}

// The jobs to show, in id order, and how many finished ones were left out.
std::pair<std::vector<const Json*>, size_t> select_jobs(const Json& jobs, bool all) {
  std::vector<const Json*> active;
  std::vector<const Json*> finished;
  for (const auto& job : jobs) (is_finished(job) ? finished : active).push_back(&job);
  size_t hidden = 0;
  if (!all && finished.size() > kFinishedShown) {
    // The latest to finish are the ones people look for; ids break ties. finished_at is
    // RFC 3339 in UTC with a fixed width, so its text sorts by time.
    auto finished_key = [](const Json* j) {
      return std::make_pair(json_string(*j, "finished_at"), json_int(*j, "id").value_or(0));
    };
    std::sort(finished.begin(), finished.end(),
              [&](const Json* a, const Json* b) { return finished_key(a) > finished_key(b); });
    hidden = finished.size() - kFinishedShown;
    finished.resize(kFinishedShown);
  }
  std::vector<const Json*> shown = active;
  shown.insert(shown.end(), finished.begin(), finished.end());
  std::sort(shown.begin(), shown.end(), [](const Json* a, const Json* b) {
    return json_int(*a, "id").value_or(0) < json_int(*b, "id").value_or(0);
  });
  return {shown, hidden};
}

std::string render_jobs(const Json& answer, bool all, int64_t now_ms, bool color) {
  const Json& jobs = json_array(answer, "jobs");
  if (jobs.empty()) return "no jobs\n";
  auto [shown, hidden] = select_jobs(jobs, all);
  Table table({"ID", "NAME", "STATE", "PRI", "GPUS", "TIME", "REASON/COMMAND"});
  for (const Json* job : shown) {
    std::string state = json_string(*job, "state");
    table.add_row({field_text(*job, "id"), name_or_dash(*job), Cell(state, state_style(state)),
                   field_text(*job, "priority"), field_text(*job, "gpus_requested"),
                   job_time(*job, now_ms), truncate(reason_or_command(*job), kCommandColumns)});
  }
  std::string out = table.render(color);
  if (hidden > 0) {
    out +=
        fmt::format("{} more finished job{} (gpuq status --all)\n", hidden, hidden == 1 ? "" : "s");
  }
  return out;
}

}  // namespace

int run_status(Context& ctx, const StatusOptions& options) {
  auto response = ctx.client().get("/v1/status");
  if (!response) return ctx.report(response.error());
  if (options.json) {
    return print_body(ctx, response->body);
  }
  auto answer = parse_json(response->body);
  if (!answer) return ctx.report(answer.error());
  ctx.out() << render_gpus(*answer, ctx.color()) << '\n'
            << render_jobs(*answer, options.all, ctx.io().wall_ms(), ctx.color());
  return kExitOk;
}

}  // namespace gpuq::cli
