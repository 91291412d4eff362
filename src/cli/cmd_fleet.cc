// SPDX-License-Identifier: Apache-2.0
// `gpuq fleet status|show|logs|cancel|drain|undrain|move`: the fleet client's operations
// (fleet/client.h) and what they print. `gpuq fleet submit` is in cmd_fleet_submit.cc.
#include <fmt/format.h>

#include "base/time.h"
#include "cli/fleet_commands.h"
#include "cli/fleet_format.h"
#include "cli/format.h"
#include "fleet/client.h"

namespace gpuq::cli {
namespace {

std::string label(const fleet::FleetJob& job) {
  return job.name.empty() ? job.id : fmt::format("{} ({})", job.id, job.name);
}

std::string after_text(const fleet::FleetJob& job) {
  std::string text;
  for (const auto& dep : job.after) {
    if (!text.empty()) text += ", ";
    text += fmt::format("{} {}", to_string(dep.kind), dep.target);
  }
  return text.empty() ? "-" : text;
}

void print_show(Context& ctx, const fleet::JobView& view) {
  const fleet::FleetJob& job = view.job;
  auto line = [&](std::string_view key, const std::string& value) {
    ctx.out() << fmt::format("{:<13}{}\n", std::string(key) + ":", value.empty() ? "-" : value);
  };
  line("id", job.id);
  line("name", job.name);
  std::string state = view.state;
  if (view.cancel_requested && state == fleet::kRunning) state += " (cancel requested)";
  line("state", state);
  std::string queue = job.node.empty() ? "class " + job.klass : "node " + job.node;
  if (auto gpu = fleet::pinned_gpu(job.spec)) queue += fmt::format(", gpu{} only", *gpu);
  line("queue", queue);
  line("submitted", fmt::format("{} by {}", format_rfc3339(job.submitted_ms), job.submitted_by));
  line("script", job.spec.script_name);
  line("gpus", std::to_string(job.spec.gpus));
  line("priority", std::to_string(job.spec.priority));
  line("after", after_text(job));
  if (view.claim) {
    const fleet::Claim& claim = *view.claim;
    line("node", claim.node);
    line("attempt", std::to_string(claim.attempt));
    line("runs", std::to_string(claim.runs));
    line("exit code", claim.exit_code ? std::to_string(*claim.exit_code) : "");
    line("reason", claim.reason);
  }
  if (!view.outputs.empty()) {
    ctx.out() << "outputs:\n";
    for (const fleet::OutputRecord& o : view.outputs) {
      std::string when = o.pushed_ms > 0 ? format_rfc3339(o.pushed_ms) : "never";
      std::string text = fmt::format("  {}  {}  pushed {}  {}  (attempt {} on {})", o.path, format_bytes(o.size),
                                     when, o.state, o.attempt, o.node.empty() ? "-" : o.node);
      if (!o.error.empty()) text += ": " + o.error;
      ctx.out() << text << '\n';
    }
  }
}

// Prints what is new in a log read (all of it when it was rewritten shorter).
void print_new(Context& ctx, const std::string& body, size_t& printed) {
  if (body.size() < printed) printed = 0;
  ctx.out() << std::string_view(body).substr(printed);
  ctx.out().flush();
  printed = body.size();
}

// `logs -f`: the log and the claim every kFleetLogPoll (a conditional GET: an unchanged log
// costs no body), until the claim is final; then the log once more, for its last sync.
int follow_log(Context& ctx, fleet::ObjectStore& store, const std::string& id, int attempt) {
  std::string etag;
  size_t printed = 0;
  int shown_attempt = 0;
  for (bool last = false;; ctx.io().sleep(kFleetLogPoll)) {
    auto claim = fleet::read_claim(store, id);
    if (!claim) return report_fleet_error(ctx, claim.error());
    last = *claim && fleet::is_final_state((*claim)->claim.state);
    if (*claim && (*claim)->claim.attempt == 0) return kExitOk;  // ended before any run
    auto log = fleet::read_log(store, id, attempt, etag);
    if (log && !log->object.not_modified) {
      if (log->attempt != shown_attempt && shown_attempt != 0) {
        ctx.err() << fmt::format("gpuq: attempt {} (the job was taken over)\n", log->attempt);
        printed = 0;
      }
      shown_attempt = log->attempt;
      etag = log->object.etag;
      print_new(ctx, log->object.body, printed);
    } else if (!log && log.error().code != Code::kNotFound &&
               log.error().code != Code::kFailedPrecondition) {
      return report_fleet_error(ctx, log.error());
    }
    if (last) return kExitOk;
  }
}

}  // namespace

int run_fleet_status(Context& ctx, fleet::ObjectStore& store, const FleetStatusOptions& options,
                     bool json) {
  fleet::StatusOptions read;
  if (options.all) read.queued_rows = 0;
  if (options.limit) read.queued_rows = *options.limit;
  auto status = fleet::status(store, read);
  if (!status) return report_fleet_error(ctx, status.error());
  if (json) return print_json(ctx, fleet_status_json(*status));
  ctx.out() << render_fleet_nodes(status->nodes, ctx.color()) << '\n';
  if (std::string gpus = render_fleet_gpus(status->nodes); !gpus.empty()) ctx.out() << gpus << '\n';
  ctx.out() << render_fleet_jobs(*status, ctx.color());
  return kExitOk;
}

int run_fleet_show(Context& ctx, fleet::ObjectStore& store, const std::string& ref, bool json) {
  auto view = fleet::show(store, ref);
  if (!view) return report_fleet_error(ctx, view.error());
  if (!json) {
    print_show(ctx, *view);
    return kExitOk;
  }
  Json out = fleet_job_json(view->job);
  out["state"] = view->state;
  out["cancel_requested"] = view->cancel_requested;
  out["claim"] = view->claim ? to_cli_json(fleet::to_json(*view->claim)) : Json();
  out["outputs"] = to_cli_json(fleet::outputs_to_json(view->outputs)["outputs"]);
  return print_json(ctx, out);
}

int run_fleet_logs(Context& ctx, fleet::ObjectStore& store, const FleetLogsOptions& options,
                   bool json) {
  auto id = fleet::resolve_job(store, options.ref);
  if (!id) return report_fleet_error(ctx, id.error());
  if (options.follow) return follow_log(ctx, store, *id, options.attempt);
  auto log = fleet::read_log(store, *id, options.attempt);
  if (!log) return report_fleet_error(ctx, log.error());
  if (json) {
    return print_json(ctx, Json{{"id", *id}, {"attempt", log->attempt}, {"log", log->object.body}});
  }
  ctx.out() << log->object.body;
  return kExitOk;
}

int run_fleet_cancel(Context& ctx, fleet::ObjectStore& store, const std::string& ref, bool json) {
  auto view = fleet::show(store, ref);
  if (!view) return report_fleet_error(ctx, view.error());
  auto outcome = fleet::cancel(store, view->job.id, ctx.io().wall_ms());
  if (!outcome) return report_fleet_error(ctx, outcome.error());
  bool done = *outcome == fleet::CancelOutcome::kCancelled;
  if (json) {
    return print_json(ctx, Json{{"id", view->job.id},
                                {"name", view->job.name.empty() ? Json() : Json(view->job.name)},
                                {"result", done ? "cancelled" : "requested"}});
  }
  if (done) {
    ctx.out() << "cancelled " << label(view->job) << '\n';
  } else {
    std::string holder = view->claim && !view->claim->node.empty() ? view->claim->node : "its node";
    ctx.out() << fmt::format("cancel requested for {}: {} stops it and records it as cancelled\n",
                             label(view->job), holder);
  }
  return kExitOk;
}

int run_fleet_drain(Context& ctx, fleet::ObjectStore& store, const std::string& node, bool on,
                    bool json) {
  if (auto st = fleet::drain(store, node, on); !st) return report_fleet_error(ctx, st.error());
  if (json) return print_json(ctx, Json{{"node", node}, {"draining", on}});
  ctx.out() << (on ? fmt::format("node {} drains: it takes no new jobs; running ones finish\n", node)
                   : fmt::format("node {} takes jobs again\n", node));
  return kExitOk;
}

int run_fleet_move(Context& ctx, fleet::ObjectStore& store, const std::string& from,
                   const std::string& to, bool json) {
  auto moved = fleet::move_pinned(store, from, to, ctx.io().wall_ms());
  if (!moved) return report_fleet_error(ctx, moved.error());
  if (json) {
    Json jobs = Json::array();
    for (const auto& entry : *moved) {
      jobs.push_back({{"id", entry.id},
                      {"name", entry.name.empty() ? Json() : Json(entry.name)},
                      {"action", std::string(fleet::to_string(entry.action))},
                      {"detail", entry.detail}});
    }
    return print_json(ctx, Json{{"from", from}, {"to", to}, {"jobs", jobs}});
  }
  if (moved->empty()) ctx.out() << fmt::format("no jobs are pinned to {}\n", from);
  for (const auto& entry : *moved) {
    std::string job = entry.name.empty() ? entry.id : fmt::format("{} ({})", entry.id, entry.name);
    using Action = fleet::MovedEntry::Action;
    switch (entry.action) {
      case Action::kMoved: ctx.out() << fmt::format("moved {} to {}\n", job, to); break;
      case Action::kTakenOver:
        ctx.out() << fmt::format("moved {} to {}: {}; it runs again from the start\n", job, to,
                                 entry.detail);
        break;
      case Action::kCleaned: ctx.out() << fmt::format("removed {}: it ended ({})\n", job, entry.detail); break;
      case Action::kCancelled: ctx.out() << fmt::format("cancelled {}: {}\n", job, entry.detail); break;
      case Action::kSkipped: ctx.out() << fmt::format("left {} on {}: {}\n", job, from, entry.detail); break;
    }
  }
  return kExitOk;
}

}  // namespace gpuq::cli
