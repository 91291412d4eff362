// SPDX-License-Identifier: Apache-2.0
// The dashboard's data endpoints (docs/api.md, "Timeline" and "Report"): GET /v1/timeline
// (runs, predicted runs and idle-while-waiting stretches in a window) and GET /v1/report (GPU
// usage by key, waits, idle and lost GPU-hours), and the utilisation samples that
// GET /v1/jobs/{ref} adds to each run. They read the server's read-only store (never the
// actor) and compute with the pure functions of usage.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "api/bodies.h"
#include "api/server.h"
#include "api/usage.h"
#include "base/time.h"

namespace gpuq::api {
namespace {

// The most samples a run shows on its job's page.
constexpr size_t kMaxSamplesShown = 200;

nlohmann::json name_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

// GPU-hours as shown: to the nearest 0.001 (3.6 GPU-seconds).
double hours(double value) { return std::round(value * 1000.0) / 1000.0; }

nlohmann::json wait_rows(const std::vector<WaitStats>& rows, const char* key_field, bool numeric) {
  nlohmann::json out = nlohmann::json::array();
  for (const WaitStats& w : rows) {
    nlohmann::json key = numeric ? nlohmann::json(std::stoi(w.key)) : nlohmann::json(w.key);
    out.push_back({{key_field, key}, {"p50_s", w.p50_s}, {"p90_s", w.p90_s}, {"max_s", w.max_s},
                   {"jobs", w.jobs}});
  }
  return out;
}

}  // namespace

void Server::attach_samples(const Job& job, nlohmann::json& out) {
  std::vector<int64_t> ids;
  for (const Run& run : job.runs) ids.push_back(run.id);
  auto samples = store_->run_samples(ids, 0, std::numeric_limits<int64_t>::max());
  for (size_t i = 0; i < job.runs.size() && i < out["runs"].size(); ++i) {
    nlohmann::json points = nlohmann::json::array();
    if (samples) {
      if (auto it = samples->find(job.runs[i].id); it != samples->end()) {
        for (const RunSample& s : downsample(it->second, kMaxSamplesShown)) {
          points.push_back({s.time_ms, s.util >= 0 ? nlohmann::json(s.util) : nlohmann::json(nullptr), s.mem_mib});
        }
      }
    }
    out["runs"][i]["samples"] = std::move(points);
  }
}

Response Server::timeline(const Target& target) {
  int64_t now = wall_now_ms();
  auto decoded = decode_timeline_query(target, now);
  if (!decoded) return error_response(decoded.error());
  const Window window = *decoded;

  auto runs = store_->usage_runs(window.from_ms, window.to_ms);
  if (!runs) return error_response(runs.error());
  nlohmann::json run_list = nlohmann::json::array();
  for (const auto& r : *runs) {
    run_list.push_back({{"job", r.job_id},
                        {"name", name_or_null(r.name)},
                        {"user", name_or_null(r.user)},
                        {"run", r.number},
                        {"gpus", r.gpus},
                        {"start_ms", r.started_at_ms},
                        {"end_ms", r.ended_at_ms ? nlohmann::json(r.ended_at_ms) : nlohmann::json(nullptr)},
                        {"outcome", to_string(r.outcome)}});
  }
  auto etas = current_etas(now);
  if (!etas) return error_response(etas.error());
  std::vector<std::pair<int64_t, EtaCache::Predicted>> predicted;
  for (const auto& [id, p] : (*etas)->runs) {
    EtaCache::Predicted shown = p;
    int64_t late = std::max<int64_t>(0, now - shown.start_ms);  // a start in the past is now
    shown.start_ms += late;
    shown.end_ms += late;
    if (shown.start_ms < window.to_ms && shown.end_ms > window.from_ms) predicted.emplace_back(id, shown);
  }
  std::sort(predicted.begin(), predicted.end(), [](const auto& a, const auto& b) {
    return a.second.start_ms != b.second.start_ms ? a.second.start_ms < b.second.start_ms : a.first < b.first;
  });
  nlohmann::json predicted_list = nlohmann::json::array();
  for (const auto& [id, p] : predicted) {
    predicted_list.push_back({{"job", id}, {"name", name_or_null(p.name)}, {"gpus_requested", p.gpus},
                              {"start_ms", p.start_ms}, {"end_ms", p.end_ms}});
  }
  const auto& config = context_.queue.config();
  auto events = store_->jobless_events("queue.idle_with_work", window.from_ms, window.to_ms,
                                       2 * config.watch.repeat_ms);
  if (!events) return error_response(events.error());
  nlohmann::json idle = nlohmann::json::array();
  for (const IdleInterval& i : idle_while_waiting(*events, window, now)) {
    idle.push_back({{"from_ms", i.from_ms}, {"to_ms", i.to_ms}, {"free_gpus", i.free_gpus}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& r : context_.queue.inventory().resources) gpus.push_back(r.name);
  return json_response(http::status::ok, {{"from_ms", window.from_ms},
                                          {"to_ms", window.to_ms},
                                          {"now_ms", now},
                                          {"gpus", std::move(gpus)},
                                          {"runs", std::move(run_list)},
                                          {"predicted", std::move(predicted_list)},
                                          {"idle_while_waiting", std::move(idle)},
                                          {"eta_note", (*etas)->note}});
}

Response Server::report(const Target& target) {
  int64_t now = wall_now_ms();
  auto query = decode_report_query(target, now);
  if (!query) return error_response(query.error());
  const Window window = query->window;
  const GroupBy by = query->by;
  const auto& config = context_.queue.config();
  std::vector<std::string> gpu_names;
  for (const auto& r : context_.queue.inventory().resources) gpu_names.push_back(r.name);

  auto runs = store_->usage_runs(window.from_ms, window.to_ms);
  if (!runs) return error_response(runs.error());
  std::vector<int64_t> run_ids;
  for (const auto& r : *runs) run_ids.push_back(r.run_id);
  // A sample stands for the time to the next one: samples come every 30 s (or every probe
  // when it is slower); a gap over twice that is time the probe did not see.
  int64_t max_gap = 2 * std::max<int64_t>(30'000, config.probe_interval_ms);
  auto samples = store_->run_samples(run_ids, window.from_ms - max_gap, window.to_ms);
  if (!samples) return error_response(samples.error());
  auto events = store_->jobless_events("queue.idle_with_work", window.from_ms, window.to_ms,
                                       2 * config.watch.repeat_ms);
  if (!events) return error_response(events.error());

  double machine = static_cast<double>(window.length_ms()) * static_cast<double>(gpu_names.size()) / kMsPerHour;
  nlohmann::json groups = nlohmann::json::array();
  std::vector<UsageGroup> grouped = gpu_hours_by(*runs, by, window, now, gpu_names);
  if (by == GroupBy::kUser) add_fair_shares(grouped);
  auto fraction = [](double f) { return std::round(f * 10000.0) / 10000.0; };
  for (const UsageGroup& g : grouped) {
    nlohmann::json row = {{"key", g.key}, {"gpu_hours", hours(g.gpu_hours)},
                          {"share", fraction(g.share)}, {"runs", g.runs}, {"jobs", g.jobs}};
    if (by == GroupBy::kUser) {
      row["used_share"] = fraction(g.used_share);
      row["fair_share"] = g.fair_share < 0 ? nlohmann::json() : nlohmann::json(fraction(g.fair_share));
    }
    groups.push_back(std::move(row));
  }
  Waits w = waits(*runs, window);
  double idle_held = idle_held_gpu_hours(*runs, *samples, static_cast<int>(config.watch.gpu_idle_utilization),
                                         max_gap, window, now);
  nlohmann::json lost = nlohmann::json::object();
  for (const auto& [outcome, h] : lost_gpu_hours(*runs, window, now)) lost[outcome] = hours(h);
  double idle_waiting = interval_gpu_hours(idle_while_waiting(*events, window, now));
  return json_response(http::status::ok,
                       {{"since_ms", window.from_ms},
                        {"until_ms", window.to_ms},
                        {"gpus", gpu_names.size()},
                        {"machine_gpu_hours", hours(machine)},
                        {"by", to_string(by)},
                        {"groups", std::move(groups)},
                        {"wait", {{"by_user", wait_rows(w.by_user, "key", false)},
                                  {"by_gpus", wait_rows(w.by_gpus, "gpus", true)}}},
                        {"idle_held_gpu_hours", hours(idle_held)},
                        {"idle_utilization", config.watch.gpu_idle_utilization},
                        {"lost_gpu_hours", std::move(lost)},
                        {"idle_while_waiting_gpu_hours", hours(idle_waiting)}});
}

}  // namespace gpuq::api
