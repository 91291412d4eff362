// SPDX-License-Identifier: Apache-2.0
#include "sim/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/duration.h"

namespace gpuq::sim {
namespace {

std::string gpu_list(const std::vector<int>& gpus) {
  if (gpus.empty()) return "-";
  std::string out;
  for (int g : gpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(g);
  }
  return out;
}

std::string duration_text(int64_t ms) { return ms == 0 ? "0s" : format_duration(Millis(ms)); }

std::string seconds_text(double s) { return duration_text(std::llround(s * 1000.0)); }

}  // namespace

std::string format_result_table(const SimResult& result, bool with_jobs) {
  std::string out;
  if (with_jobs && !result.jobs.empty()) {
    std::vector<const SimRow*> rows;
    for (const SimRow& r : result.jobs) rows.push_back(&r);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const SimRow* a, const SimRow* b) { return a->start_ms < b->start_ms; });
    size_t width = 3;
    bool looks = false;  // a FIRST LOOK column, when a job asked for one
    for (const SimRow* r : rows) {
      width = std::max(width, r->name.size());
      looks = looks || r->first_look_ms >= 0;
    }
    out += fmt::format("{:<{}}  {:>8}  {:>8}  {}{}\n", "JOB", width, "START", "END",
                       looks ? fmt::format("{:>10}  ", "FIRST LOOK") : "", "GPUS");
    for (const SimRow* r : rows) {
      std::string look = r->first_look_ms >= 0 ? duration_text(r->first_look_ms) : "-";
      out += fmt::format("{:<{}}  {:>8}  {:>8}  {}{}\n", r->name, width, duration_text(r->start_ms),
                         duration_text(r->end_ms), looks ? fmt::format("{:>10}  ", look) : "",
                         gpu_list(r->gpus));
    }
    out += "\n";
  }
  out += fmt::format("makespan     {}\n", duration_text(result.makespan_ms));
  out += fmt::format("utilization  {:.1f}%\n", result.utilization * 100.0);
  out += fmt::format("mean wait    {}\n", seconds_text(result.mean_wait_s));
  out += fmt::format("p95 wait     {}\n", seconds_text(result.p95_wait_s));
  return out;
}

nlohmann::json result_to_json(const SimResult& result, bool with_jobs) {
  nlohmann::json j = {{"makespan_s", static_cast<double>(result.makespan_ms) / 1000.0},
                      {"utilization", result.utilization},
                      {"mean_wait_s", result.mean_wait_s},
                      {"p95_wait_s", result.p95_wait_s}};
  if (with_jobs) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const SimRow& r : result.jobs) {
      jobs.push_back({{"name", r.name},
                      {"start_s", static_cast<double>(r.start_ms) / 1000.0},
                      {"end_s", static_cast<double>(r.end_ms) / 1000.0},
                      {"gpus", r.gpus}});
      if (r.first_look_ms >= 0)
        jobs.back()["first_look_s"] = static_cast<double>(r.first_look_ms) / 1000.0;
    }
    j["jobs"] = std::move(jobs);
  }
  return j;
}

}  // namespace gpuq::sim
