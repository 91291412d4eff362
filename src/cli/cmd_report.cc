// SPDX-License-Identifier: Apache-2.0
// `gpuq report [--since 7d] [--until T] [--by user|name|outcome|gpu] [--json|--csv]`: who used
// the GPUs and how well, from GET /v1/report (docs/report.md): GPU-hours by key with their share
// of the machine, waits by user and by GPU count, GPU-hours held while idle, lost to failed and
// stopped runs, and free while jobs waited. The daemon computes; this prints a table, CSV (a
// header row and one row per group) or the daemon's JSON.
#include <algorithm>
#include <fmt/format.h>

#include "base/duration.h"
#include "base/time.h"
#include "cli/commands.h"
#include "cli/format.h"

namespace gpuq::cli {
namespace {

double number(const Json& object, std::string_view key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string hours_text(double hours) { return fmt::format("{:.1f}", hours); }

std::string percent_text(double share) { return fmt::format("{:.1f}%", share * 100.0); }

std::string wait_text(double seconds) {
  return format_duration(Millis(static_cast<int64_t>(seconds * 1000.0)));
}

// Quotes a CSV field when it holds a comma, a quote or a line break (RFC 4180). A text that a
// spreadsheet would take for a formula (it begins with = + - @, a tab or a carriage return: a job
// named "=HYPERLINK(...)") gets a ' first, which spreadsheets show as text.
std::string csv_field(std::string text) {
  if (!text.empty() && std::string_view("=+-@\t\r").find(text[0]) != std::string_view::npos)
    text.insert(0, "'");
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void add_wait_rows(Table& table, const Json& rows, std::string_view key, std::string_view prefix) {
  for (const auto& w : rows) {
    table.add_row({std::string(prefix) + field_text(w, key), field_text(w, "jobs"),
                   wait_text(number(w, "p50_s")), wait_text(number(w, "p90_s")),
                   wait_text(number(w, "max_s"))});
  }
}

}  // namespace

Outcome<std::string> build_report_target(const ReportOptions& options) {
  for (const auto& [flag, value] : {std::pair{"--since", &options.since}, std::pair{"--until", &options.until}}) {
    if (value->empty() || parse_duration(*value) || parse_rfc3339(*value)) continue;
    return cli_fail(kExitUsage, fmt::format("{} {}: give a duration back from now (7d, 36h) or an "
                                            "RFC 3339 time (2026-11-01T00:00:00Z)",
                                            flag, *value));
  }
  if (options.by != "user" && options.by != "name" && options.by != "outcome" && options.by != "gpu") {
    return cli_fail(kExitUsage, fmt::format("--by {}: group by user, name, outcome or gpu", options.by));
  }
  if (options.json && options.csv) return cli_fail(kExitUsage, "give --json or --csv, not both");
  std::string target = "/v1/report?since=" + percent_encode(options.since.empty() ? "7d" : options.since);
  if (!options.until.empty()) target += "&until=" + percent_encode(options.until);
  return target + "&by=" + percent_encode(options.by);
}

std::string report_csv(const Json& report) {
  std::string out = fmt::format("{},gpu_hours,share,runs,jobs\n", json_string(report, "by", "key"));
  for (const auto& g : json_array(report, "groups")) {
    out += fmt::format("{},{},{},{},{}\n", csv_field(json_string(g, "key")), field_text(g, "gpu_hours"),
                       field_text(g, "share"), field_text(g, "runs"), field_text(g, "jobs"));
  }
  return out;
}

std::string report_text(const Json& report, bool color) {
  int64_t since = json_int(report, "since_ms").value_or(0);
  int64_t until = json_int(report, "until_ms").value_or(0);
  double machine = number(report, "machine_gpu_hours");
  std::string out = fmt::format("GPU usage {} to {} ({}): {} GPUs, {} GPU-hours\n\n",
                                format_rfc3339(since), format_rfc3339(until),
                                format_duration_exact(Millis(std::max<int64_t>(0, until - since))),
                                json_int(report, "gpus").value_or(0), hours_text(machine));
  std::string by = json_string(report, "by", "user");
  // By user, each user's part of the GPU-hours used beside their fair share of them (a daemon
  // older than [users] sends neither).
  bool shares = false;
  for (const auto& g : json_array(report, "groups")) shares = shares || g.contains("used_share");
  std::vector<std::string> headers = {
      by == "gpu" ? "GPU" : by == "name" ? "NAME" : by == "outcome" ? "OUTCOME" : "USER",
      "GPU-HOURS", "SHARE", "RUNS", "JOBS"};
  if (shares) headers.insert(headers.end(), {"OF USED", "FAIR SHARE"});
  Table groups(headers);
  double used = 0;
  for (const auto& g : json_array(report, "groups")) {
    used += number(g, "gpu_hours");
    std::vector<Cell> row = {json_string(g, "key"), hours_text(number(g, "gpu_hours")),
                                    percent_text(number(g, "share")), field_text(g, "runs"),
                                    field_text(g, "jobs")};
    if (shares) {
      const bool fair = g.contains("fair_share") && g["fair_share"].is_number();
      row.push_back(percent_text(number(g, "used_share")));
      row.push_back(fair ? percent_text(number(g, "fair_share")) : "-");
    }
    groups.add_row(std::move(row));
  }
  if (groups.row_count() == 0) {
    out += "no runs in this window\n";
  } else {
    out += groups.render(color);
  }
  if (by != "gpu") {
    out += fmt::format("total {} GPU-hours used, {} of the machine\n",
                       hours_text(used), percent_text(machine > 0 ? used / machine : 0));
  }
  const Json& wait = report.contains("wait") ? report["wait"] : Json::object();
  Table waits({"WAITED", "JOBS", "P50", "P90", "MAX"});
  add_wait_rows(waits, json_array(wait, "by_user"), "key", "user ");
  add_wait_rows(waits, json_array(wait, "by_gpus"), "gpus", "gpus=");
  if (waits.row_count() > 0) out += "\n" + waits.render(color);

  const Json& lost = report.contains("lost_gpu_hours") ? report["lost_gpu_hours"] : Json::object();
  std::vector<std::string> parts;
  double lost_total = 0;
  for (const auto& [outcome, h] : lost.items()) {
    if (!h.is_number() || h.get<double>() <= 0) continue;
    lost_total += h.get<double>();
    parts.push_back(fmt::format("{} {}", outcome, hours_text(h.get<double>())));
  }
  out += fmt::format("\nidle while held: {} GPU-hours (samples at or below {}% utilisation)\n",
                     hours_text(number(report, "idle_held_gpu_hours")),
                     json_int(report, "idle_utilization").value_or(0));
  out += fmt::format("lost: {} GPU-hours{}\n", hours_text(lost_total),
                     parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", ")));
  out += fmt::format("free while jobs waited: {} GPU-hours\n",
                     hours_text(number(report, "idle_while_waiting_gpu_hours")));
  return out;
}

int run_report(Context& ctx, const ReportOptions& options) {
  auto target = build_report_target(options);
  if (!target) return ctx.report(target.error());
  auto response = ctx.client().get(*target, kReportTimeout);
  if (!response) return ctx.report(response.error());
  if (options.json) return print_body(ctx, response->body);
  auto answer = parse_json(response->body);
  if (!answer) return ctx.report(answer.error());
  ctx.out() << (options.csv ? report_csv(*answer) : report_text(*answer, ctx.color()));
  return kExitOk;
}

}  // namespace gpuq::cli
