// SPDX-License-Identifier: Apache-2.0
// RunLifecycle's construction and what the queue reads or notes of live runs (the probe's
// peaks, samples and GPUs seen). Starting, stopping, settling, recording ends, recovery and
// cleanup live in run_start.cc, run_stop.cc, run_preempt.cc, run_settle.cc, run_finish.cc,
// run_recovery.cc and run_cleanup.cc.
#include "daemon/run_lifecycle.h"

namespace gpuq::daemon {

RunLifecycle::RunLifecycle(World& world, store::Store& store, const gpu::Inventory& inventory,
                           const Config& config, RunPlaces places, RunHost& host)
    : world_(world),
      store_(store),
      inventory_(inventory),
      config_(config),
      places_(std::move(places)),
      host_(host) {}

RunLifecycle::~RunLifecycle() = default;

const LiveRun* RunLifecycle::find(int64_t job_id) const {
  auto it = running_.find(job_id);
  return it == running_.end() ? nullptr : &it->second;
}

bool RunLifecycle::raise_peak(int64_t job_id, int64_t mib) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return false;
  int64_t& peak = it->second.peak_mib.emplace(it->second.peak_mib.value_or(0));
  if (mib <= peak) return false;
  peak = mib;
  return true;
}

void RunLifecycle::note_sampled(int64_t job_id, int64_t at_ms) {
  if (auto it = running_.find(job_id); it != running_.end()) it->second.sampled_ms = at_ms;
}

void RunLifecycle::note_seen_gpus(int64_t job_id, std::vector<std::string> names,
                                  std::vector<int> indices) {
  auto it = running_.find(job_id);
  if (it == running_.end()) return;
  it->second.run.seen_gpus = std::move(names);
  it->second.run.seen_gpu_indices = std::move(indices);
}

}  // namespace gpuq::daemon
