// SPDX-License-Identifier: Apache-2.0
// /metrics per GPU (docs/api.md, "Metrics, per GPU"): for each GPU the daemon schedules onto, its
// utilisation, memory used, free and total, temperature and power draw under the names of
// NVIDIA's DCGM exporter (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED, ...) with its labels (gpu,
// UUID, device, Hostname; model_name for its modelName, which Prometheus' lint refuses), so its
// dashboards and alerts read gpuq's numbers; and gpuq's own: the state each GPU shows
// (gpuq_gpu_state, one sample per state, 1 for the current one) and the job whose run holds it
// (gpuq_gpu_job_info). The readings are the probe's last sample (daemon/gpu_readings.h): no
// probing of its own. A value the probe does not know has no sample.
// Pure functions over plain values, plus gather_gpu_metrics(), which reads the store (call it on
// the store's thread, as gather_metrics()).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "daemon/gpu_readings.h"
#include "daemon/queue.h"
#include "store/store.h"

namespace gpuq::api {

class Exposition;

// One GPU as /metrics shows it.
struct GpuMetricsRow {
  int index = 0;           // the device index: the label gpu
  std::string uuid;        // UUID
  std::string device;      // "nvidia0" (the device node's name; a fake GPU's resource name)
  std::string model;       // model_name
  int64_t memory_total_mib = 0;  // 0 when unknown
  daemon::GpuReading reading;
  std::string_view state;  // one of kGpuStates (api/gpu_view.h)
  int64_t job = 0;         // the job whose run holds it; 0 when none
  std::string job_name;
  std::string user;        // the job's user; "" for jobs without one
};

// Writes the per-GPU families for `rows` (GPUs without a device index — the stand-in lane — are
// not GPUs and have no row). `hostname` is the Hostname label.
void render_gpu_metrics(Exposition& x, const std::vector<GpuMetricsRow>& rows,
                        std::string_view hostname);

// The rows of every inventory slot that has a device index: the queue's last readings and GPU
// views, and the name and user of each holding job from `store`.
Result<std::vector<GpuMetricsRow>> gather_gpu_metrics(store::Store& store,
                                                      const daemon::Queue& queue,
                                                      const std::vector<Run>& running,
                                                      const daemon::WaitList& waits);

// This machine's host name (gethostname), "" when it cannot be told.
std::string metrics_hostname();

}  // namespace gpuq::api
