// SPDX-License-Identifier: Apache-2.0
#include "sim/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "sim/engine.h"

namespace gpuq::sim {
namespace detail {

void Simulation::add_running(int e, int64_t expected_end_ms) {
  const Entity& ent = entities_[static_cast<size_t>(e)];
  sched::RunningJob r;
  r.id = e + 1;
  r.slots = ent.slots;
  r.lanes = ent.lanes;
  r.expected_end_ms = expected_end_ms;
  r.share = ent.share;
  r.gpu_mem_mib = ent.gpu_mem_mib;
  r.owner = ent.owner;
  running_pos_[static_cast<size_t>(e)] = snap_.running.size();
  snap_.running.push_back(std::move(r));
}

void Simulation::make_eligible(int e) {
  queue_.insert(entities_[static_cast<size_t>(e)].key, entities_[static_cast<size_t>(e)].info);
}

void Simulation::finish(int e, int64_t t) {
  Entity& ent = entities_[static_cast<size_t>(e)];
  ent.finished = true;
  ent.end_ms = t;
  charge_owner(ent, t);
  last_end_ms_ = std::max(last_end_ms_, t);
  for (int slot : ent.slots) {
    sched::Gpu& g = snap_.gpus[static_cast<size_t>(slot)];
    if (ent.share) {
      --g.sharers;
      g.memory_free_mib += ent.gpu_mem_mib;
    } else {
      g.held_exclusive = false;
      g.memory_free_mib = g.memory_total_mib;
    }
    if (!busy(g)) busy_ms_ += t - busy_since_[static_cast<size_t>(slot)];
  }
  for (int l : ent.lanes) --snap_.lanes[static_cast<size_t>(l)].used;
  size_t pos = running_pos_[static_cast<size_t>(e)];
  if (pos + 1 != snap_.running.size()) {
    snap_.running[pos] = std::move(snap_.running.back());
    running_pos_[static_cast<size_t>(snap_.running[pos].id - 1)] = pos;
  }
  snap_.running.pop_back();
  for (int d : ent.dependents) dependency_met(d);
}

void Simulation::dependency_met(int e) {
  Entity& ent = entities_[static_cast<size_t>(e)];
  if (--ent.deps_left == 0 && ent.submitted) make_eligible(e);
}

// Takes `slots` (and the entity's lanes) on `gpus`/`lanes`, refusing what is physically
// impossible: a bad or busy GPU, a full lane, memory that is not there.
Status Simulation::hold(const Entity& e, const std::vector<int>& slots,
                        std::vector<sched::Gpu>& gpus, std::vector<sched::Lane>& lanes) const {
  auto bad = [&](const std::string& why) {
    return fail(
        e.running_at_zero ? Code::kInvalidArgument : Code::kInternal,
        fmt::format("{}job '{}': {}", e.running_at_zero ? "running " : "the scheduler started ",
                    e.name, why));
  };
  if (static_cast<int>(slots.size()) != e.gpus) {
    return bad(fmt::format("it needs {} GPUs and got {}", e.gpus, slots.size()));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    int slot = slots[i];
    if (slot < 0 || slot >= static_cast<int>(gpus.size()))
      return bad(fmt::format("there is no GPU {}", slot));
    if (std::find(slots.begin(), slots.begin() + static_cast<long>(i), slot) !=
        slots.begin() + static_cast<long>(i)) {
      return bad(fmt::format("GPU {} given twice", slot));
    }
    sched::Gpu& g = gpus[static_cast<size_t>(slot)];
    if (g.held_exclusive || (!e.share && g.sharers > 0))
      return bad(fmt::format("GPU {} is busy", slot));
    if (e.share) {
      if (g.memory_free_mib < e.gpu_mem_mib)
        return bad(fmt::format("GPU {} lacks {} MiB", slot, e.gpu_mem_mib));
      ++g.sharers;
      g.memory_free_mib -= e.gpu_mem_mib;
    } else {
      g.held_exclusive = true;
      g.memory_free_mib = 0;
    }
  }
  for (int l : e.lanes) {
    sched::Lane& lane = lanes[static_cast<size_t>(l)];
    if (lane.used >= lane.capacity) return bad(fmt::format("lane '{}' is full", lane.name));
    ++lane.used;
  }
  return ok();
}

Status Simulation::check_starts(const sched::Decision& d, std::vector<sched::Gpu>& gpus,
                                std::vector<sched::Lane>& lanes) {
  for (const sched::Start& s : d.starts) {
    int64_t e = s.job_id - 1;
    if (e < 0 || e >= static_cast<int64_t>(job_count_) || !in_window_[static_cast<size_t>(e)] ||
        started_[static_cast<size_t>(e)]) {
      return fail(Code::kInternal,
                  fmt::format("the scheduler started job id {}, which is not queued", s.job_id));
    }
    started_[static_cast<size_t>(e)] = 1;
    GPUQ_SIM_TRY(hold(entities_[static_cast<size_t>(e)], s.slots, gpus, lanes));
  }
  return ok();
}

void Simulation::add_to_window(const QueueKey& key) {
  snap_.queue.push_back(pending_[static_cast<size_t>(key.job)]);
  in_window_[static_cast<size_t>(key.job)] = 1;
}

void Simulation::commit(const sched::Decision& d, std::vector<sched::Gpu>& gpus,
                        std::vector<sched::Lane>& lanes, int64_t t) {
  for (size_t g = 0; g < gpus.size(); ++g) {
    if (!busy(snap_.gpus[g]) && busy(gpus[g])) busy_since_[g] = t;
  }
  snap_.gpus.swap(gpus);
  snap_.lanes.swap(lanes);
  for (const sched::Start& s : d.starts) {
    int e = static_cast<int>(s.job_id - 1);
    Entity& ent = entities_[static_cast<size_t>(e)];
    ent.started = true;
    ent.start_ms = t;
    ent.slots = s.slots;
    queue_.erase(ent.key, ent.info);
    add_running(e, ent.estimate_ms > 0 ? t + ent.estimate_ms : 0);
    events_.push({t + ent.duration_ms, kEnd, e});
    for (int c : ent.consumers) {
      const double frac = entities_[static_cast<size_t>(c)].produced_at_frac;
      events_.push({t + std::llround(frac * static_cast<double>(ent.duration_ms)), kProduced, c});
    }
  }
}

bool Simulation::completes(size_t waiting_in_window) const {
  return snap_.policy == sched::Policy::kBackfill && snap_.max_reservations > 0 &&
         options_.max_window == 0 &&
         waiting_in_window >= static_cast<size_t>(snap_.max_reservations);
}

Status Simulation::decide(sched::Decision& decision) {
  decision = schedule_(snap_);
  ++stats_.passes;
  stats_.jobs_passed += static_cast<int64_t>(snap_.queue.size());
  stats_.max_window = std::max(stats_.max_window, static_cast<int64_t>(snap_.queue.size()));
  for (const sched::PendingJob& p : snap_.queue) started_[static_cast<size_t>(p.id - 1)] = 0;
  pass_gpus_ = snap_.gpus;
  pass_lanes_ = snap_.lanes;
  return check_starts(decision, pass_gpus_, pass_lanes_);
}

Status Simulation::pass(int64_t t) {
  if (queue_.empty()) return ok();
  snap_.now_ms = t;
  update_owners(t);
  static const std::vector<std::pair<QueueKey, QueueJobInfo>> kNone;
  if (!options_.full_queue &&
      !queue_.first_unproven(snap_.gpus, snap_.lanes, std::nullopt, started_, kNone)) {
    return ok();  // nothing that waits fits what is free (P2): no pass can start anything
  }
  size_t target = options_.initial_window;
  if (target == 0) {
    // Enough for what can start, plus the waiting jobs that get reservations (P4), plus a
    // little slack. Small: a window that proves too small doubles, or is completed (P6), for
    // less than passing a larger window at every event (4 rather than 16: a 3,000-job trace
    // on 8 GPUs took 15% fewer instructions; any of 2-16 gave the same plan cost).
    target = 4 + static_cast<size_t>(snap_.policy == sched::Policy::kBackfill
                                          ? std::max(0, snap_.max_reservations)
                                          : 0);
    for (const sched::Gpu& g : snap_.gpus) target += busy(g) ? 0 : 2;
    for (const sched::Lane& l : snap_.lanes)
      target += static_cast<size_t>(std::max(0, l.capacity - l.used));
  }
  if (options_.full_queue) target = std::numeric_limits<size_t>::max();
  if (options_.max_window > 0) target = std::min(target, options_.max_window);
  snap_.queue.clear();
  auto next = queue_.begin();
  std::optional<QueueKey> last;
  sched::Decision decision;
  // Members, so that their room (and the lanes' strings) is reused from pass to pass.
  std::vector<sched::Gpu>& gpus = pass_gpus_;
  std::vector<sched::Lane>& lanes = pass_lanes_;
  std::vector<std::pair<QueueKey, QueueJobInfo>>& waiting = pass_waiting_;
  std::optional<QueueKey> reach;  // the window grows at least up to this job
  for (;;) {
    while (next != queue_.end() &&
           (snap_.queue.size() < target || (reach && !(*reach < *next)))) {
      add_to_window(*next);
      last = *next++;
    }
    GPUQ_SIM_TRY(decide(decision));
    if (next == queue_.end()) break;
    if (options_.max_window > 0 && snap_.queue.size() >= options_.max_window) {
      ++stats_.capped_passes;
      break;
    }
    waiting.clear();
    for (const sched::PendingJob& p : snap_.queue) {
      const Entity& ent = entities_[static_cast<size_t>(p.id - 1)];
      if (!started_[static_cast<size_t>(p.id - 1)]) waiting.emplace_back(ent.key, ent.info);
    }
    const int64_t latest = decision.latest_reserved_start_ms;
    const int64_t alike_from = latest == std::numeric_limits<int64_t>::max()
                                   ? latest
                                   : std::max<int64_t>(latest - t, 0) + 1;  // P5
    if (completes(waiting.size())) {  // P6: the prefix plus its candidates, and done
      queue_.all_unproven(gpus, lanes, *last, started_, waiting, alike_from, pass_candidates_);
      if (pass_candidates_.empty()) break;
      // In scheduling order, as the prefix is: the scheduler then need not sort the window.
      // Sorted as integers, priority then queue order (both fit 32 bits: a priority is an int,
      // a queue order a job's rank), and the job found again by its queue order.
      pass_packed_.clear();
      for (const QueueKey& key : pass_candidates_) {
        auto priority = static_cast<uint32_t>(static_cast<int32_t>(key.priority)) ^ 0x8000'0000u;
        pass_packed_.push_back(uint64_t{priority} << 32 | static_cast<uint32_t>(key.order));
      }
      std::sort(pass_packed_.begin(), pass_packed_.end());
      for (uint64_t packed : pass_packed_) {
        size_t order = static_cast<size_t>(packed & 0xffff'ffffu);
        add_to_window(entities_[static_cast<size_t>(job_by_order_[order - 1])].key);
      }
      ++stats_.completed_passes;
      GPUQ_SIM_TRY(decide(decision));
      break;
    }
    std::optional<QueueKey> unproven =
        queue_.first_unproven(gpus, lanes, last, started_, waiting, alike_from);
    if (!unproven) break;
    // Double rather than jump to `unproven`: a deep candidate is often ruled out by P4 once
    // the window holds a few more waiting jobs. But reach it when it lies beyond the double
    // (the first job of a free reservation's pool, deep in the queue): doubling towards it
    // would pass the whole window again at each step on the way.
    // (Filling up to `reach` walks the queue once; counting its depth first walked it twice.)
    target = snap_.queue.size() * 2;
    reach = unproven;
    if (options_.max_window > 0) {
      target = std::min(target, options_.max_window);
      reach.reset();
      size_t depth = snap_.queue.size() + 1;
      for (auto it = next; it != queue_.end() && it->job != unproven->job; ++it) ++depth;
      target = std::min(std::max(target, depth), options_.max_window);
    }
  }
  for (const sched::PendingJob& p : snap_.queue) in_window_[static_cast<size_t>(p.id - 1)] = 0;
  commit(decision, gpus, lanes, t);
  for (const sched::Start& s : decision.starts) started_[static_cast<size_t>(s.job_id - 1)] = 0;
  return ok();
}

// Nothing runs and nothing is due, yet jobs are left: find the first that waits and ask the
// scheduler why (over the whole queue, as the daemon would).
Status Simulation::stalled() {
  size_t left = 0;
  for (size_t i = 0; i < job_count_; ++i) left += entities_[i].finished ? 0 : 1;
  if (queue_.empty()) {
    return fail(Code::kInternal, fmt::format("{} jobs never became eligible", left));
  }
  snap_.queue.clear();
  for (const QueueKey& k : queue_) snap_.queue.push_back(pending_[static_cast<size_t>(k.job)]);
  snap_.reasons = true;
  sched::Decision d = schedule_(snap_);
  const Entity& first = entities_[static_cast<size_t>(queue_.begin()->job)];
  std::string why = "the scheduler starts nothing on the idle machine";
  for (const sched::Wait& w : d.waits) {
    if (w.job_id - 1 == queue_.begin()->job) why = w.reason.text(snap_);
  }
  std::string more = left == 2  ? " (1 other job waits on it or behind it)"
                     : left > 2 ? fmt::format(" ({} other jobs wait on it or behind it)", left - 1)
                                : "";
  return fail(Code::kInvalidArgument,
              fmt::format("job '{}' can never start: {}{}", first.name, why, more));
}

Status Simulation::run() {
  while (!events_.empty()) {
    int64_t t = events_.top().time;
    ++stats_.events;
    while (!events_.empty() && events_.top().time == t) {
      Event ev = events_.top();
      events_.pop();
      if (ev.kind == kEnd) {
        finish(ev.entity, t);
      } else if (ev.kind == kProduced) {
        dependency_met(ev.entity);
      } else {
        Entity& ent = entities_[static_cast<size_t>(ev.entity)];
        ent.submitted = true;
        if (ent.deps_left == 0) make_eligible(ev.entity);
      }
    }
    GPUQ_SIM_TRY(pass(t));
  }
  for (size_t i = 0; i < job_count_; ++i) {
    if (!entities_[i].finished) return stalled();
  }
  return ok();
}

SimResult Simulation::result() const {
  SimResult r;
  r.stats = stats_;
  bool any_running = entities_.size() > job_count_;
  int64_t origin = 0;
  if (!any_running && job_count_ > 0) {
    origin = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < job_count_; ++i) origin = std::min(origin, entities_[i].submit_ms);
  }
  r.makespan_ms = entities_.empty() ? 0 : last_end_ms_ - origin;
  if (r.makespan_ms > 0 && machine_.gpus > 0) {
    r.utilization = static_cast<double>(busy_ms_) /
                    (static_cast<double>(machine_.gpus) * static_cast<double>(r.makespan_ms));
  }
  std::vector<int64_t> waits;
  for (size_t i = 0; i < job_count_; ++i) {
    const Entity& e = entities_[i];
    int64_t first_look = e.first_look_frac < 0
                             ? -1
                             : e.start_ms + std::llround(e.first_look_frac *
                                                         static_cast<double>(e.duration_ms));
    r.jobs.push_back(SimRow{e.name, e.start_ms, e.end_ms, e.slots, first_look});
    waits.push_back(e.start_ms - e.submit_ms);
  }
  if (!waits.empty()) {
    double sum = 0;
    for (int64_t w : waits) sum += static_cast<double>(w);
    r.mean_wait_s = sum / static_cast<double>(waits.size()) / 1000.0;
    std::sort(waits.begin(), waits.end());
    size_t rank = (95 * waits.size() + 99) / 100;  // ceil(0.95 n), in integers
    r.p95_wait_s = static_cast<double>(waits[rank - 1]) / 1000.0;
  }
  return r;
}

}  // namespace detail

Result<SimResult> simulate(const std::vector<SimJob>& jobs, const SimMachine& machine,
                           sched::Policy policy, const std::vector<SimRunning>& running) {
  return simulate(jobs, machine, policy, running, SimOptions{});
}

Result<SimResult> simulate(const std::vector<SimJob>& jobs, const SimMachine& machine,
                           sched::Policy policy, const std::vector<SimRunning>& running,
                           const SimOptions& options) {
  detail::Simulation sim(machine, policy, options);
  GPUQ_SIM_TRY(sim.load(jobs, running));
  GPUQ_SIM_TRY(sim.run());
  return sim.result();
}

}  // namespace gpuq::sim
