// SPDX-License-Identifier: Apache-2.0
// The Queue's side of the GPU probe: each sample tells which GPU processes belong to runs (by
// marker or ancestry, runner/ownership.h) and which are foreign, keeps each GPU's usage for
// status and admission, and records each run's peak GPU memory — the footprint later runs of
// the same job name inherit when they declare none. It also records, in the same commit, a
// utilisation sample of each running run at most every kSampleEveryMs (the dashboard's job
// page and `gpuq report`'s idle-held hours) and the GPUs each run's processes were seen on.
#include <fmt/format.h>
#include <set>
#include <unordered_set>

#include "base/time.h"
#include "daemon/queue.h"
#include "runner/ownership.h"

namespace gpuq::daemon {
namespace {

// At most one utilisation sample per running run this often (docs/api.md, "samples").
constexpr int64_t kSampleEveryMs = 30'000;

// What one run showed in one probe.
struct RunUse {
  int64_t mem_mib = 0;        // its processes' memory, summed over GPUs
  std::set<int> seen_slots;   // GPUs its processes were listed on
};

}  // namespace

std::optional<std::pair<int64_t, int>> Queue::learned_gpu_mem(const std::string& name) {
  // Most names never had a footprint: answer those from memory, without a query.
  if (!footprint_names_.count(name)) return std::nullopt;
  auto found = store_.learned_footprint(name);
  if (!found || !*found) return std::nullopt;
  return std::make_pair((*found)->peak_mib, (*found)->runs);
}

void Queue::on_probe(Result<gpu::ProbeSample> sample) {
  if (stopping_) return;
  if (!sample) {
    if (!probe_failing_) {
      probe_failing_ = true;
      (void)commit([&] {
        return add_event("resource.probe_failed", std::nullopt, std::nullopt,
                         {{"error", sample.error().message},
                          {"effect", "GPU usage, foreign processes and peak memory are not "
                                     "updated until the probe works again"}});
      });
    }
    return;
  }
  if (probe_failing_) {
    probe_failing_ = false;
    (void)commit([&] { return add_event("resource.probe_recovered", std::nullopt, std::nullopt); });
  }
  // Who may own a GPU process: live runs, and finished runs still being cleaned up.
  std::vector<runner::LiveRunMarker> markers;
  for (const auto& [id, live] : runs_->live()) {
    markers.push_back({id, live.run.run_id, live.run.shim_pid, live.run.shim_start_ticks});
  }
  for (const auto& [row, c] : runs_->cleanings()) markers.push_back({c.job_id, c.run_id, 0, 0});
  std::vector<ForeignObservation> observations;
  std::unordered_set<int> invisible;  // listed pids not in /proc now
  bool usage_changed = false;
  std::unordered_map<int64_t, int64_t> run_mem;  // job id → most MiB on one of its GPUs
  std::unordered_map<int64_t, RunUse> run_use;    // job id → this probe's use
  std::vector<int> slot_util(inventory_.resources.size(), -1);
  std::vector<GpuReading> readings(inventory_.resources.size());
  for (const gpu::GpuSample& g : sample->gpus) {
    int slot = -1;
    for (size_t s = 0; s < inventory_.resources.size(); ++s) {
      if (inventory_.resources[s].index == g.index) slot = static_cast<int>(s);
    }
    if (slot < 0) continue;
    readings[slot] = {g.memory_used_mib, g.utilization, g.temperature_c, g.power_w};
    GpuHealth& health = health_[slot];
    GpuHealth before = health;
    ForeignObservation o;
    o.slot = slot;
    o.gpu = inventory_.resources[slot].name;
    o.memory_used_mib = g.memory_used_mib;
    std::unordered_map<int64_t, int64_t> owned;  // job id → MiB on this GPU
    int64_t owned_total = 0;
    bool owned_unknown = false;  // a run's process whose memory the probe cannot tell
    for (const gpu::GpuProcess& p : g.processes) {
      auto owner = runner::owning_job(world_.processes(), p.pid, markers);
      if (owner) {
        run_use[*owner].seen_slots.insert(slot);
        owned[*owner] += p.used_memory_mib;
        owned_total += p.used_memory_mib;
        owned_unknown = owned_unknown || p.used_memory_mib == 0;
        continue;
      }
      auto facts = world_.processes().facts(p.pid);
      if (!facts) {
        // Not in /proc: it may be a run's process that exited after the sample was taken.
        // Foreign only when the next probe still lists it (e.g. another PID namespace).
        invisible.insert(p.pid);
        if (!invisible_pids_.count(p.pid)) continue;
      }
      GpuUser user;
      user.pid = p.pid;
      user.used_memory_mib = p.used_memory_mib;
      user.command = world_.processes().cmdline(p.pid);
      if (facts) user.user = os::user_name(facts->uid);
      o.foreign.push_back(std::move(user));
    }
    bool held = !holders_[slot].empty();
    o.memory_without_process = g.processes.empty() && !held && config_.foreign_memory_mib > 0 &&
                               g.memory_used_mib >= config_.foreign_memory_mib;
    health.memory_used_mib = g.memory_used_mib;
    health.utilization = g.utilization;
    slot_util[slot] = g.utilization;
    health.other_memory_mib = (g.processes.empty() || owned_unknown) ? (held ? 0 : g.memory_used_mib)
                                                                     : std::max<int64_t>(0, g.memory_used_mib - owned_total);
    usage_changed = usage_changed || before.memory_used_mib != health.memory_used_mib ||
                    before.utilization != health.utilization ||
                    before.other_memory_mib != health.other_memory_mib;
    // A run alone on a GPU whose processes are not listed (another PID namespace) is charged
    // the GPU's whole use.
    if (g.processes.empty() && holders_[slot].size() == 1) owned[holders_[slot].front()] = g.memory_used_mib;
    for (const auto& [job, mib] : owned) {
      run_mem[job] = std::max(run_mem[job], mib);
      run_use[job].mem_mib += mib;
    }
    observations.push_back(std::move(o));
  }
  invisible_pids_ = std::move(invisible);
  readings_.set(std::move(readings));
  ForeignTracker before = foreign_;
  auto events = foreign_.observe(observations, world_.now_ms());
  // New usage changes memory admission and what status shows: plan (and publish) again.
  if (usage_changed) request_pass();
  std::vector<std::pair<int64_t, int64_t>> new_peaks;  // run row → MiB
  for (const auto& [id, live] : runs_->live()) {
    auto mem = run_mem.find(id);
    if (mem == run_mem.end() || live.settling || live.ended) continue;
    if (runs_->raise_peak(id, mem->second)) new_peaks.emplace_back(live.run.id, *live.peak_mib);
  }
  // Utilisation samples that are due, and runs seen on GPUs not seen before.
  int64_t now = world_.now_ms();
  std::vector<std::pair<int64_t, RunSample>> samples;  // job id → sample
  std::vector<std::pair<int64_t, std::set<int>>> seen;  // job id → every slot seen so far
  for (const auto& [id, live] : runs_->live()) {
    if (live.settling || live.ended) continue;
    // A run without GPUs has no utilisation to sample (but may be seen on one).
    if (!live.slots.empty() && (live.sampled_ms == 0 || now - live.sampled_ms >= kSampleEveryMs)) {
      RunSample sample;
      sample.time_ms = now;
      int sum = 0, known = 0;
      for (int slot : live.slots) {
        if (slot >= 0 && slot < static_cast<int>(slot_util.size()) && slot_util[slot] >= 0) {
          sum += slot_util[slot];
          ++known;
        }
      }
      sample.util = known ? (sum + known / 2) / known : -1;
      if (auto use = run_use.find(id); use != run_use.end()) sample.mem_mib = use->second.mem_mib;
      // A probe that tells nothing of its GPUs (the stand-in lane, no NVML) records nothing.
      if (known > 0 || sample.mem_mib > 0) samples.emplace_back(id, sample);
    }
    auto use = run_use.find(id);
    if (use == run_use.end()) continue;
    std::set<int> slots;
    for (const auto& name : live.run.seen_gpus) {
      if (int slot = slot_named(name); slot >= 0) slots.insert(slot);
    }
    size_t before = slots.size();
    slots.insert(use->second.seen_slots.begin(), use->second.seen_slots.end());
    if (slots.size() != before) seen.emplace_back(id, std::move(slots));
  }
  if (events.empty() && new_peaks.empty() && samples.empty() && seen.empty()) return;
  auto seen_names = [this](const std::set<int>& slots) {
    std::pair<std::vector<std::string>, std::vector<int>> out;
    for (int slot : slots) {
      out.first.push_back(inventory_.resources[slot].name);
      if (inventory_.resources[slot].index) out.second.push_back(*inventory_.resources[slot].index);
    }
    return out;
  };
  auto committed = commit([&]() -> Status {
    for (const auto& [row, mib] : new_peaks) {
      if (auto st = store_.set_peak_gpu_mem(row, mib); !st) return st;
    }
    for (const auto& [id, sample] : samples) {
      if (auto st = store_.add_run_sample(runs_->find(id)->run.id, sample); !st) return st;
    }
    for (const auto& [id, slots] : seen) {
      auto [names, indices] = seen_names(slots);
      if (auto st = store_.set_seen_gpus(runs_->find(id)->run.id, names, indices); !st) return st;
    }
    for (const auto& e : events) {
      if (auto st = add_event(e.kind, std::nullopt, std::nullopt, e.data); !st) return st;
    }
    return ok();
  });
  // Not recorded: the tracker forgets this probe, so the next one tells the same again. (The
  // peaks stay in memory: they are recorded with the run's end at the latest.)
  if (!committed) foreign_ = std::move(before);
  if (committed) {
    for (const auto& [id, sample] : samples) runs_->note_sampled(id, sample.time_ms);
    for (const auto& [id, slots] : seen) {
      auto [names, indices] = seen_names(slots);
      runs_->note_seen_gpus(id, std::move(names), std::move(indices));
    }
  }
  if (!events.empty()) request_pass();
}

}  // namespace gpuq::daemon
