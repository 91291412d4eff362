// SPDX-License-Identifier: Apache-2.0
// `gpuq status`: the GPUs, the lanes and the queue in one screen. Shows every job that is not
// finished but the pending ones past the first kPendingShown to be served, and the latest
// finished ones (all of them with --all); when the daemon drains, the first line says so;
// pending jobs show the start the daemon predicts (ETA).
#include <fmt/format.h>

#include <algorithm>

#include "base/time.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/gpu_state.h"

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
  Table table({"NAME", "INDEX", "STATE", "JOB", "MODEL", "NOTE"});
  for (const auto& r : resources) {
    table.add_row({field_text(r, "name"), field_text(r, "index"), gpu_state_cell(r),
                   field_text(r, "job"), field_text(r, "model"), gpu_state_note(r)});
  }
  return table.render(color);
}

// The jobs to show, in id order, and how many finished ones were left out. The daemon sends
// only the latest finished jobs and says how many there are (`finished_total`); an older
// daemon sends them all, and the CLI keeps the latest itself.
std::pair<std::vector<const Json*>, size_t> select_jobs(const Json& answer, bool all) {
  const Json& jobs = json_array(answer, "jobs");
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
  if (auto total = json_int(answer, "finished_total"); total && !all) {
    hidden = static_cast<size_t>(std::max<int64_t>(0, *total - static_cast<int64_t>(finished.size())));
  }
  std::vector<const Json*> shown = active;
  shown.insert(shown.end(), finished.begin(), finished.end());
  std::sort(shown.begin(), shown.end(), [](const Json* a, const Json* b) {
    return json_int(*a, "id").value_or(0) < json_int(*b, "id").value_or(0);
  });
  return {shown, hidden};
}

// A list of names or ids as "a,b"; "-" when empty.
std::string list_text(const Json& values) {
  if (!values.is_array() || values.empty()) return "-";
  std::string out;
  for (const auto& v : values) {
    if (!out.empty()) out += ',';
    out += v.is_string() ? v.get<std::string>() : json_text(v);
  }
  return out;
}

std::string render_lanes(const Json& answer) {
  const Json& lanes = json_array(answer, "lanes");
  if (lanes.empty()) return "";
  Table table({"NAME", "CAPACITY", "USED", "EXCLUDES", "JOBS"});
  for (const auto& lane : lanes) {
    table.add_row({field_text(lane, "name"), field_text(lane, "capacity"), field_text(lane, "used"),
                   list_text(json_array(lane, "excludes")), list_text(json_array(lane, "jobs"))});
  }
  return table.render(false);
}

// The watchers' open episodes: waiting that has lasted (job.quiet, queue.idle_with_work, ...).
// GPUs in attention are left out: their state column says so already.
std::string render_watch(const Json& answer, bool color) {
  Table table({"WATCH", "JOB", "FOR", "WHY"});
  bool any = false;
  for (const auto& episode : json_array(answer, "watch")) {
    std::string kind = json_string(episode, "kind");
    if (kind == "resource.attention") continue;
    const Json& detail = episode.contains("detail") ? episode["detail"] : Json::object();
    table.add_row({kind, field_text(episode, "job"),
                   format_duration(Millis(json_int(episode, "for_ms").value_or(0))),
                   json_string(detail, "why")});
    any = true;
  }
  return any ? table.render(color) : "";
}

// When a pending job is expected to start: "in 12m", "in 1h05m", "now" once due; "-" when
// the daemon does not know.
std::string eta_text(const Json& job, int64_t now_ms) {
  if (json_string(job, "state") != "pending") return "";
  std::string eta = json_string(job, "eta");
  if (eta.empty()) return "-";
  auto at = parse_rfc3339(eta);
  if (!at) return "-";
  int64_t seconds = (*at - now_ms + 999) / 1000;  // rounded up: "in 0s" would read as now
  if (seconds <= 0) return "now";
  if (seconds < 60) return fmt::format("in {}s", seconds);
  if (seconds < 3600) return fmt::format("in {}m", seconds / 60);
  return "in " + format_duration(Millis(seconds * 1000));
}

bool is_draining(const Json& answer) {
  if (!answer.is_object()) return false;
  auto it = answer.find("draining");
  return it != answer.end() && it->is_boolean() && it->get<bool>();
}

bool has_etas(const std::vector<const Json*>& jobs) {
  return std::any_of(jobs.begin(), jobs.end(),
                     [](const Json* job) { return job->is_object() && job->contains("eta"); });
}

// An unfinished array's line: its counts by state ("2 running, 5 pending, 3 succeeded") and
// its cap.
std::string array_counts_text(const Json& array) {
  std::vector<std::string> parts;
  const Json& counts = array.contains("counts") ? array["counts"] : Json::object();
  // The states in the order a person reads a sweep's progress.
  for (const char* state : {"running", "pending", "held", "blocked", "succeeded", "failed",
                            "cancelled", "skipped"}) {
    if (auto n = json_int(counts, state); n && *n > 0) parts.push_back(fmt::format("{} {}", *n, state));
  }
  std::string text = fmt::format("{} element{}: {}", field_text(array, "size"),
                                 json_int(array, "size").value_or(0) == 1 ? "" : "s",
                                 fmt::join(parts, ", "));
  if (auto cap = json_int(array, "max_running")) text += fmt::format("; at most {} at once", *cap);
  return text;
}

// The array's state in one word: running while an element runs, else pending while one waits,
// else held or blocked.
std::string array_state(const Json& array) {
  const Json& counts = array.contains("counts") ? array["counts"] : Json::object();
  for (const char* state : {"running", "pending", "held", "blocked"}) {
    if (json_int(counts, state).value_or(0) > 0) return state;
  }
  return "finished";
}

std::string render_jobs(const Json& answer, bool all, bool collapsed, int64_t now_ms, bool color) {
  auto [shown, hidden] = select_jobs(answer, all);
  // The arrays whose elements the daemon left out (?arrays=collapse): one line each, placed by
  // their first element's id.
  std::vector<const Json*> arrays;
  if (collapsed) {
    for (const auto& array : json_array(answer, "arrays")) arrays.push_back(&array);
  }
  // A page of the queue (?pending_limit=): the pending jobs the daemon left out, counted.
  int64_t pending_hidden = 0;
  if (auto total = json_int(answer, "pending_total")) {
    int64_t listed = std::count_if(shown.begin(), shown.end(),
                                   [](const Json* j) { return json_string(*j, "state") == "pending"; });
    pending_hidden = std::max<int64_t>(0, *total - listed);
  }
  // With ?held_limit= the held and blocked jobs the daemon left out (the newest), counted too.
  auto left_out = [&](const char* state) -> int64_t {
    auto total = json_int(answer, fmt::format("{}_total", state));
    if (!total) return 0;
    int64_t listed = std::count_if(shown.begin(), shown.end(),
                                   [state](const Json* j) { return json_string(*j, "state") == state; });
    return std::max<int64_t>(0, *total - listed);
  };
  const int64_t held_hidden = left_out("held");
  const int64_t blocked_hidden = left_out("blocked");
  if (shown.empty() && hidden == 0 && pending_hidden == 0 && held_hidden == 0 &&
      blocked_hidden == 0 && arrays.empty()) {
    return "no jobs\n";
  }
  // An older daemon says nothing of ETAs; then the column would only hold dashes.
  bool etas = has_etas(shown);
  std::vector<std::string> headers = {"ID", "NAME", "STATE", "PRI", "GPUS", "TIME"};
  if (etas) headers.emplace_back("ETA");
  headers.emplace_back("REASON/COMMAND");
  Table table(headers);
  auto array_row = [&](const Json& array) {
    std::string state = array_state(array);
    std::vector<Cell> row = {fmt::format("{}-{}", field_text(array, "first_job"), field_text(array, "last_job")),
                             field_text(array, "name"), Cell(state, state_style(state)), "-", "-", "-"};
    if (etas) row.emplace_back("");
    row.emplace_back(array_counts_text(array));  // whole: the counts are the line's point
    table.add_row(std::move(row));
  };
  size_t next_array = 0;
  for (const Json* job : shown) {
    int64_t id = json_int(*job, "id").value_or(0);
    for (; next_array < arrays.size() && json_int(*arrays[next_array], "first_job").value_or(0) < id; ++next_array) {
      array_row(*arrays[next_array]);
    }
    std::string state = json_string(*job, "state");
    std::vector<Cell> row = {field_text(*job, "id"), name_or_dash(*job),
                             Cell(state, state_style(state)), field_text(*job, "priority"),
                             field_text(*job, "gpus_requested"), job_time(*job, now_ms)};
    if (etas) row.emplace_back(eta_text(*job, now_ms));
    row.emplace_back(truncate(reason_or_command(*job), kCommandColumns));
    table.add_row(std::move(row));
  }
  for (; next_array < arrays.size(); ++next_array) array_row(*arrays[next_array]);
  std::string out = table.render(color);
  if (pending_hidden > 0) {
    out += fmt::format("{} more pending job{}: those above are the first {} to be served "
                       "(gpuq status --all lists every one)\n",
                       format_count(pending_hidden), pending_hidden == 1 ? "" : "s", kPendingShown);
  }
  for (const auto& [count, state] : {std::pair{held_hidden, "held"}, std::pair{blocked_hidden, "blocked"}}) {
    if (count == 0) continue;
    out += fmt::format("{} more {} job{}: those above are the oldest {} (gpuq status --all lists every one)\n",
                       format_count(count), state, count == 1 ? "" : "s", kPendingShown);
  }
  if (hidden > 0) {
    out +=
        fmt::format("{} more finished job{} (gpuq status --all)\n",
                    format_count(static_cast<int64_t>(hidden)), hidden == 1 ? "" : "s");
  }
  return out;
}

}  // namespace

int run_status(Context& ctx, const StatusOptions& options) {
  // Without a parameter the daemon lists as many finished jobs as this shows (kFinishedShown).
  // The table shows an unfinished array as one line unless --expand; --json lists every job.
  // One user's view (--user, --mine) is the same table of that user's jobs (an array's elements
  // share their submitter, so its line counts that user's alone).
  std::string user = options.user;
  if (options.mine) user = ctx.io().login ? ctx.io().login() : "";
  bool collapse = !options.json && !options.expand;
  std::vector<std::string> params;
  if (options.all) params.push_back("finished=all");
  // The table lists the first pending jobs to be served and counts the rest; --json, --all and
  // --expand list every one. A user's page is the first of theirs, with their counts.
  if (collapse && !options.all) {
    params.push_back(fmt::format("pending_limit={}", kPendingShown));
    params.push_back(fmt::format("held_limit={}", kPendingShown));
    if (!user.empty()) params.push_back("user_page=1");
  }
  if (collapse) params.push_back("arrays=collapse");
  if (!user.empty()) params.push_back("user=" + percent_encode(user));
  std::string target = "/v1/status";
  for (size_t i = 0; i < params.size(); ++i) target += (i == 0 ? "?" : "&") + params[i];
  auto response = ctx.client().get(target);
  if (!response) return ctx.report(response.error());
  if (options.json) {
    return print_body(ctx, response->body);
  }
  auto answer = parse_json(response->body);
  if (!answer) return ctx.report(answer.error());
  if (is_draining(*answer)) {
    ctx.out() << paint("DRAINING", Style::kYellow, ctx.color())
              << ": nothing new starts; running jobs finish (gpuq undrain)\n\n";
  }
  ctx.out() << render_gpus(*answer, ctx.color()) << '\n';
  if (std::string lanes = render_lanes(*answer); !lanes.empty()) ctx.out() << lanes << '\n';
  if (std::string watch = render_watch(*answer, ctx.color()); !watch.empty()) ctx.out() << watch << '\n';
  ctx.out() << render_jobs(*answer, options.all, collapse, ctx.io().wall_ms(), ctx.color());
  return kExitOk;
}

}  // namespace gpuq::cli
