// SPDX-License-Identifier: Apache-2.0
// Checking and loading simulate()'s input into the engine: the machine, the jobs, the jobs
// running at time 0, dependencies and cycles. See simulate.h for what is refused.
#include <fmt/format.h>

#include <algorithm>

#include "sim/engine.h"

namespace gpuq::sim::detail {
namespace {

// Calls f with each job that waits for `e`: its dependents and the jobs whose input it writes.
template <typename F>
void for_each_waiter(const Entity& e, F f) {
  for (int d : e.dependents) f(d);
  for (int c : e.consumers) f(c);
}

bool excludes(const sched::Lane& a, const std::string& b) {
  return std::find(a.excludes.begin(), a.excludes.end(), b) != a.excludes.end();
}

}  // namespace

Status Simulation::load_machine() {
  const SimMachine& m = machine_;
  if (m.gpus < 0)
    return fail(Code::kInvalidArgument, "the machine's GPU count must not be negative");
  if (!m.links.empty()) {
    bool square = m.links.size() == static_cast<size_t>(m.gpus) &&
                  std::all_of(m.links.begin(), m.links.end(), [&](const auto& row) {
                    return row.size() == static_cast<size_t>(m.gpus);
                  });
    if (!square)
      return fail(Code::kInvalidArgument,
                  fmt::format("links must be {0} x {0} (one row per GPU)", m.gpus));
  }
  for (int i = 0; i < m.gpus; ++i) {
    snap_.gpus.push_back(sched::Gpu{i, true, m.gpu_memory_mib, m.gpu_memory_mib, false, 0, -1});
  }
  for (size_t r = 0; r < m.reservations.size(); ++r) {
    for (int slot : m.reservations[r].slots) {
      if (slot < 0 || slot >= m.gpus) {
        return fail(Code::kInvalidArgument,
                    fmt::format("reservation '{}' names GPU {}; the machine has GPUs 0-{}",
                                m.reservations[r].name, slot, m.gpus - 1));
      }
      if (snap_.gpus[static_cast<size_t>(slot)].reservation >= 0) {
        return fail(Code::kInvalidArgument, fmt::format("GPU {} is in two reservations", slot));
      }
      snap_.gpus[static_cast<size_t>(slot)].reservation = static_cast<int>(r);
    }
  }
  for (size_t i = 0; i < m.lanes.size(); ++i) {
    sched::Lane lane = m.lanes[i];
    lane.used = 0;
    for (size_t j = 0; j < i; ++j) {
      if (m.lanes[j].name == lane.name)
        return fail(Code::kInvalidArgument, fmt::format("lane '{}' is defined twice", lane.name));
    }
    for (const std::string& x : lane.excludes) {
      bool known = x == "gpu" || std::any_of(m.lanes.begin(), m.lanes.end(),
                                             [&](const auto& l) { return l.name == x; });
      if (!known)
        return fail(Code::kInvalidArgument,
                    fmt::format("lane '{}' excludes unknown lane '{}'", lane.name, x));
    }
    snap_.lanes.push_back(std::move(lane));
  }
  busy_since_.assign(static_cast<size_t>(m.gpus), 0);
  return ok();
}

Result<int> Simulation::lane_index(const std::string& job, const std::string& lane) const {
  for (size_t i = 0; i < snap_.lanes.size(); ++i) {
    if (snap_.lanes[i].name == lane) return static_cast<int>(i);
  }
  return fail(Code::kInvalidArgument, fmt::format("job '{}' names unknown lane '{}'", job, lane));
}

// The cases the machine's shape alone rules out; anything subtler shows up as a stall.
Status Simulation::check_can_start(const Entity& e, int reservation,
                                   const std::string& reservation_name) const {
  auto never = [&](const std::string& why) {
    return fail(Code::kInvalidArgument, fmt::format("job '{}' can never start: {}", e.name, why));
  };
  int pool = 0;
  for (const sched::Gpu& g : snap_.gpus) pool += g.reservation == reservation ? 1 : 0;
  if (e.gpus > pool) {
    if (reservation >= 0) {
      return never(fmt::format("it needs {} GPUs and reservation '{}' has {}", e.gpus,
                               reservation_name, pool));
    }
    if (pool < machine_.gpus) {
      return never(fmt::format("it needs {} GPUs and only {} of the machine's {} are not reserved",
                               e.gpus, pool, machine_.gpus));
    }
    return never(fmt::format("it needs {} GPUs and the machine has {}", e.gpus, machine_.gpus));
  }
  if (e.gpus > 0 && e.gpu_mem_mib > machine_.gpu_memory_mib) {
    return never(fmt::format("it needs {} MiB on each GPU and the GPUs have {} MiB", e.gpu_mem_mib,
                             machine_.gpu_memory_mib));
  }
  for (int l : e.lanes) {
    const sched::Lane& lane = snap_.lanes[static_cast<size_t>(l)];
    if (lane.capacity < 1)
      return never(fmt::format("lane '{}' has capacity {}", lane.name, lane.capacity));
    if (e.gpus > 0 && excludes(lane, "gpu"))
      return never(fmt::format("lane '{}' excludes GPU work", lane.name));
    if (excludes(lane, lane.name))
      return never(fmt::format("lane '{}' excludes itself", lane.name));
    for (int m : e.lanes) {
      const sched::Lane& other = snap_.lanes[static_cast<size_t>(m)];
      if (m != l && (excludes(lane, other.name) || excludes(other, lane.name))) {
        return never(
            fmt::format("its lanes '{}' and '{}' exclude each other", lane.name, other.name));
      }
    }
  }
  return ok();
}

Status Simulation::load_job(const SimJob& job, int index) {
  Entity e;
  e.name = job.name;
  if (e.name.empty())
    return fail(Code::kInvalidArgument, fmt::format("job #{} has no name", index + 1));
  if (job.gpus < 0)
    return fail(Code::kInvalidArgument, fmt::format("job '{}' needs {} GPUs", job.name, job.gpus));
  if (job.submit_ms < 0 || job.duration_ms < 0 || job.estimate_ms < 0 || job.gpu_mem_mib < 0) {
    return fail(Code::kInvalidArgument,
                fmt::format("job '{}': submit, duration, estimate and gpu_mem must not be negative",
                            job.name));
  }
  if (job.share && job.gpu_mem_mib == 0) {
    return fail(Code::kInvalidArgument,
                fmt::format("job '{}' shares GPUs but says no gpu_mem", job.name));
  }
  e.gpus = job.gpus;
  e.submit_ms = job.submit_ms;
  e.duration_ms = job.duration_ms;
  e.estimate_ms = job.estimate_ms;
  e.share = job.share;
  e.gpu_mem_mib = job.gpu_mem_mib;
  // (Written so that NaN is refused too; a first_look_frac below 0 means "not asked".)
  if (!(job.produced_at_frac >= 0 && job.produced_at_frac <= 1) || !(job.first_look_frac <= 1)) {
    return fail(Code::kInvalidArgument,
                fmt::format("job '{}': a fraction of a run must be from 0 to 1", job.name));
  }
  e.produced_at_frac = job.produced_at_frac;
  e.first_look_frac = job.first_look_frac;
  for (const std::string& lane : job.lanes) {
    auto l = lane_index(job.name, lane);
    if (!l) return tl::unexpected(l.error());
    if (std::find(e.lanes.begin(), e.lanes.end(), *l) == e.lanes.end()) e.lanes.push_back(*l);
  }
  int reservation = -1;
  if (!job.reservation.empty()) {
    for (size_t r = 0; r < machine_.reservations.size(); ++r) {
      if (machine_.reservations[r].name == job.reservation) reservation = static_cast<int>(r);
    }
    if (reservation < 0) {
      return fail(Code::kInvalidArgument, fmt::format("job '{}' names unknown reservation '{}'",
                                                      job.name, job.reservation));
    }
  }
  sched::PendingJob p;
  p.id = index + 1;
  p.priority = job.priority;
  p.gpus = job.gpus;
  p.lanes = e.lanes;
  p.gpu_mem_mib = job.gpu_mem_mib;
  p.share = job.share;
  p.estimate_ms = job.estimate_ms;
  p.reservation = reservation;
  e.owner = owner_of(job.name);
  p.owner = e.owner;
  pending_.push_back(std::move(p));
  GPUQ_SIM_TRY(check_can_start(e, reservation, job.reservation));
  e.info = QueueJobInfo{job.gpus, job.estimate_ms,
                        queue_.class_of(reservation, job.share, job.gpu_mem_mib, e.lanes)};
  if (!by_name_.emplace(e.name, index).second) {
    return fail(Code::kInvalidArgument, fmt::format("two jobs are named '{}'", e.name));
  }
  entities_.push_back(std::move(e));
  return ok();
}

Status Simulation::load_running(const SimRunning& r, int index) {
  Entity e;
  e.name = r.name;
  e.running_at_zero = true;
  e.gpus = static_cast<int>(r.slots.size());
  if (r.remaining_ms < 0)
    return fail(Code::kInvalidArgument,
                fmt::format("running job '{}' has negative time left", r.name));
  e.duration_ms = r.remaining_ms;
  e.estimate_ms = r.remaining_ms;
  for (const std::string& lane : r.lanes) {
    auto l = lane_index(r.name, lane);
    if (!l) return tl::unexpected(l.error());
    e.lanes.push_back(*l);
  }
  e.submitted = e.started = true;
  e.slots = r.slots;
  e.owner = owner_of(r.name);
  if (!by_name_.emplace(e.name, index).second) {
    return fail(Code::kInvalidArgument, fmt::format("two jobs are named '{}'", e.name));
  }
  GPUQ_SIM_TRY(hold(e, e.slots, snap_.gpus, snap_.lanes));
  entities_.push_back(std::move(e));
  add_running(index, r.remaining_ms);
  events_.push({r.remaining_ms, kEnd, index});
  return ok();
}

Status Simulation::link_dependencies(const std::vector<SimJob>& jobs) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    for (const auto* list : {&jobs[i].after, &jobs[i].after_any}) {
      for (const std::string& name : *list) {
        auto it = by_name_.find(name);
        if (it == by_name_.end()) continue;  // not simulated: already satisfied
        if (it->second == static_cast<int>(i)) {
          return fail(Code::kInvalidArgument, fmt::format("dependency cycle: {0} -> {0}", name));
        }
        entities_[static_cast<size_t>(it->second)].dependents.push_back(static_cast<int>(i));
        ++entities_[i].deps_left;
      }
    }
    if (auto it = by_name_.find(jobs[i].produced_by); it != by_name_.end()) {
      if (it->second == static_cast<int>(i)) {
        return fail(Code::kInvalidArgument,
                    fmt::format("job '{}' is produced_by itself", jobs[i].produced_by));
      }
      Entity& producer = entities_[static_cast<size_t>(it->second)];
      if (!producer.running_at_zero) {  // one running at time 0 began when nobody knows: written
        producer.consumers.push_back(static_cast<int>(i));
        ++entities_[i].deps_left;
      }
    }
  }
  return ok();
}

// Kahn's algorithm over the jobs' dependencies; what it cannot order lies on or behind a cycle.
Status Simulation::check_cycles(size_t job_count) const {
  std::vector<int> left(job_count, 0);
  std::vector<int> ready;
  for (size_t i = 0; i < job_count; ++i) {
    for_each_waiter(entities_[i], [&](int d) { ++left[static_cast<size_t>(d)]; });
  }
  for (size_t i = 0; i < job_count; ++i) {
    if (left[i] == 0) ready.push_back(static_cast<int>(i));
  }
  size_t ordered = 0;
  while (!ready.empty()) {
    int n = ready.back();
    ready.pop_back();
    ++ordered;
    for_each_waiter(entities_[static_cast<size_t>(n)], [&](int d) {
      if (--left[static_cast<size_t>(d)] == 0) ready.push_back(d);
    });
  }
  if (ordered == job_count) return ok();
  // Walk backwards along unordered dependencies from an unordered job until a name repeats.
  std::vector<std::vector<int>> deps_of(job_count);
  for (size_t i = 0; i < job_count; ++i) {
    for_each_waiter(entities_[i], [&](int d) {
      if (left[i] > 0 && left[static_cast<size_t>(d)] > 0)
        deps_of[static_cast<size_t>(d)].push_back(static_cast<int>(i));
    });
  }
  int at = -1;
  for (size_t i = 0; i < job_count && at < 0; ++i) {
    if (left[i] > 0 && !deps_of[i].empty()) at = static_cast<int>(i);
  }
  std::vector<int> path;
  std::vector<int> seen(job_count, -1);
  while (at >= 0 && seen[static_cast<size_t>(at)] < 0) {
    seen[static_cast<size_t>(at)] = static_cast<int>(path.size());
    path.push_back(at);
    at = deps_of[static_cast<size_t>(at)].empty() ? -1 : deps_of[static_cast<size_t>(at)].front();
  }
  std::string text;
  if (at >= 0) {
    for (size_t k = static_cast<size_t>(seen[static_cast<size_t>(at)]); k < path.size(); ++k) {
      text += entities_[static_cast<size_t>(path[k])].name + " -> ";
    }
    text += entities_[static_cast<size_t>(at)].name;
  }
  return fail(Code::kInvalidArgument,
              fmt::format("dependency cycle: {} (each waits for the next)", text));
}

Status Simulation::load(const std::vector<SimJob>& jobs, const std::vector<SimRunning>& running) {
  GPUQ_SIM_TRY(load_machine());
  job_count_ = jobs.size();
  running_pos_.assign(jobs.size() + running.size(), 0);
  for (size_t i = 0; i < jobs.size(); ++i) GPUQ_SIM_TRY(load_job(jobs[i], static_cast<int>(i)));
  for (size_t i = 0; i < running.size(); ++i) {
    GPUQ_SIM_TRY(load_running(running[i], static_cast<int>(jobs.size() + i)));
  }
  load_owners();
  GPUQ_SIM_TRY(link_dependencies(jobs));
  GPUQ_SIM_TRY(check_cycles(jobs.size()));
  // Queue order: submit time, then the order of the input.
  std::vector<int> by_submit(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) by_submit[i] = static_cast<int>(i);
  std::stable_sort(by_submit.begin(), by_submit.end(), [&](int a, int b) {
    return jobs[static_cast<size_t>(a)].submit_ms < jobs[static_cast<size_t>(b)].submit_ms;
  });
  for (size_t rank = 0; rank < by_submit.size(); ++rank) {
    size_t i = static_cast<size_t>(by_submit[rank]);
    pending_[i].queue_order = static_cast<int64_t>(rank) + 1;
    entities_[i].key =
        queue_.key_for(static_cast<int>(i), jobs[i].priority, pending_[i].queue_order);
    events_.push({jobs[i].submit_ms, kSubmit, static_cast<int>(i)});
  }
  job_by_order_ = std::move(by_submit);
  in_window_.assign(entities_.size(), 0);
  started_.assign(entities_.size(), 0);
  return ok();
}

}  // namespace gpuq::sim::detail
