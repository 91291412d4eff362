// SPDX-License-Identifier: Apache-2.0
#include "api/gpu_metrics.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "api/gpu_view.h"
#include "api/metrics.h"

namespace gpuq::api {
namespace {

// A DCGM-named gauge: its name, help, and its value for a row (nullopt: no sample).
struct Gauge {
  std::string_view name;
  std::string_view help;
  std::function<std::optional<double>(const GpuMetricsRow&)> value;
};

std::optional<double> known(double value) {
  return value >= 0 ? std::optional<double>(value) : std::nullopt;
}

const std::vector<Gauge>& dcgm_gauges() {
  static const std::vector<Gauge> gauges = {
      {"DCGM_FI_DEV_GPU_UTIL", "GPU utilisation, percent, at the probe's last sample.",
       [](const GpuMetricsRow& r) { return known(r.reading.utilization); }},
      {"DCGM_FI_DEV_FB_USED", "GPU memory in use, MiB.",
       [](const GpuMetricsRow& r) { return known(static_cast<double>(r.reading.memory_used_mib)); }},
      {"DCGM_FI_DEV_FB_FREE", "GPU memory free (total - used), MiB.",
       [](const GpuMetricsRow& r) -> std::optional<double> {
         if (r.memory_total_mib <= 0 || r.reading.memory_used_mib < 0) return std::nullopt;
         return static_cast<double>(std::max<int64_t>(0, r.memory_total_mib - r.reading.memory_used_mib));
       }},
      {"DCGM_FI_DEV_FB_TOTAL", "GPU memory in all, MiB.",
       [](const GpuMetricsRow& r) -> std::optional<double> {
         if (r.memory_total_mib <= 0) return std::nullopt;
         return static_cast<double>(r.memory_total_mib);
       }},
      {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature, degrees C.",
       [](const GpuMetricsRow& r) { return known(r.reading.temperature_c); }},
      {"DCGM_FI_DEV_POWER_USAGE", "GPU power draw, watts.",
       [](const GpuMetricsRow& r) { return known(r.reading.power_w); }},
  };
  return gauges;
}

}  // namespace

void render_gpu_metrics(Exposition& x, const std::vector<GpuMetricsRow>& rows,
                        std::string_view hostname) {
  auto labels_of = [&](const GpuMetricsRow& r) -> MetricLabels {
    return {{"gpu", std::to_string(r.index)},
            {"UUID", r.uuid},
            {"device", r.device},
            {"model_name", r.model},
            {"Hostname", std::string(hostname)}};
  };
  for (const Gauge& gauge : dcgm_gauges()) {
    bool any = false;
    for (const GpuMetricsRow& r : rows) any = any || gauge.value(r).has_value();
    if (!any) continue;  // a family without samples says nothing: leave it out
    x.family(gauge.name, "gauge", gauge.help);
    for (const GpuMetricsRow& r : rows) {
      if (auto value = gauge.value(r)) x.sample(gauge.name, labels_of(r), *value);
    }
  }
  if (rows.empty()) return;
  x.family("gpuq_gpu_state", "gauge",
           "The state each GPU shows (as in GET /v1/gpus): 1 for its state, 0 for the others.");
  for (const GpuMetricsRow& r : rows) {
    for (std::string_view state : kGpuStates) {
      x.sample("gpuq_gpu_state",
               {{"gpu", std::to_string(r.index)}, {"UUID", r.uuid}, {"state", std::string(state)}},
               r.state == state ? 1 : 0);
    }
  }
  x.family("gpuq_gpu_job_info", "gauge",
           "1 for each GPU a job's run holds, with the job's id, name and user.");
  for (const GpuMetricsRow& r : rows) {
    if (r.job == 0) continue;
    x.sample("gpuq_gpu_job_info",
             {{"gpu", std::to_string(r.index)},
              {"UUID", r.uuid},
              {"job_id", std::to_string(r.job)},
              {"job_name", r.job_name},
              {"user", r.user}},
             1);
  }
}

Result<std::vector<GpuMetricsRow>> gather_gpu_metrics(store::Store& store,
                                                      const daemon::Queue& queue,
                                                      const std::vector<Run>& running,
                                                      const daemon::WaitList& waits) {
  const gpu::Inventory& inventory = queue.inventory();
  const std::vector<GpuView> views = gpu_views(inventory.resources, running, waits);
  const std::vector<daemon::GpuReading> readings = queue.gpu_readings().get();
  std::map<int64_t, std::pair<std::string, std::string>> jobs;  // id -> name, user
  std::vector<GpuMetricsRow> rows;
  for (size_t slot = 0; slot < inventory.resources.size(); ++slot) {
    const Resource& r = inventory.resources[slot];
    if (!r.index) continue;
    GpuMetricsRow row;
    row.index = *r.index;
    row.uuid = r.uuid;
    row.device = inventory.mode == "nvidia" ? fmt::format("nvidia{}", *r.index) : r.name;
    row.model = r.model;
    row.memory_total_mib = r.memory_total_mib;
    if (slot < readings.size()) row.reading = readings[slot];
    row.state = views[slot].state;
    row.job = views[slot].job;
    if (row.job != 0) {
      auto known = jobs.find(row.job);
      if (known == jobs.end()) {
        auto job = store.find_job(row.job, /*with_runs=*/false);
        if (!job) return tl::unexpected(job.error());
        known = jobs.emplace(row.job, *job ? std::make_pair((*job)->spec.name, (*job)->spec.user)
                                           : std::make_pair(std::string(), std::string()))
                    .first;
      }
      row.job_name = known->second.first;
      row.user = known->second.second;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string metrics_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace gpuq::api
