// SPDX-License-Identifier: Apache-2.0
// The simulator's engine, shared by simulate.cc (the clock and the passes) and
// simulate_load.cc (checking and loading the input). Internal to src/sim: one Simulation
// owns the virtual machine's state (a sched::Snapshot whose queue is the current pass's
// window), the jobs' progress and the event queue, for one call of simulate(), on one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/simulate.h"
#include "sim/window.h"

namespace gpuq::sim::detail {

#define GPUQ_SIM_TRY(expr)                                           \
  do {                                                               \
    if (auto st_ = (expr); !st_) return tl::unexpected(st_.error()); \
  } while (0)

// A sim job, or a job running at time 0 (then `running_at_zero`). Its scheduler id is its
// index + 1.
struct Entity {
  std::string name;
  bool running_at_zero = false;
  int gpus = 0;
  int64_t submit_ms = 0;
  int64_t duration_ms = 0;
  int64_t estimate_ms = 0;
  std::vector<int> lanes;
  bool share = false;
  int64_t gpu_mem_mib = 0;
  int deps_left = 0;
  std::vector<int> dependents;
  std::vector<int> consumers;  // jobs whose input this one writes (SimJob::produced_by)
  double produced_at_frac = 1.0;  // when, in its producer's run, this job's input is written
  double first_look_frac = -1;
  bool submitted = false;
  bool started = false;
  bool finished = false;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::vector<int> slots;
  int owner = -1;  // index into Simulation::owners_, -1 = nobody's
  QueueKey key;
  QueueJobInfo info;
};

struct Event {
  int64_t time = 0;
  int kind = 0;  // kEnd, kSubmit, kProduced in that order at one time (all before the pass)
  int entity = 0;
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    return entity > o.entity;
  }
};
inline constexpr int kEnd = 0;
inline constexpr int kSubmit = 1;
inline constexpr int kProduced = 2;  // the entity's input is written (its producer's run)

inline bool busy(const sched::Gpu& g) { return g.held_exclusive || g.sharers > 0; }

class Simulation {
 public:
  Simulation(const SimMachine& machine, sched::Policy policy, const SimOptions& options)
      : machine_(machine),
        options_(options),
        queue_(policy, machine.max_reservations, machine.backfill_unknown_limit_ms == 0) {
    schedule_ = options.schedule ? options.schedule : ScheduleFn(&sched::schedule);
    snap_.policy = policy;
    snap_.links = machine.links;
    snap_.reservations = machine.reservations;
    snap_.backfill_unknown_limit_ms = machine.backfill_unknown_limit_ms;
    snap_.max_reservations = machine.max_reservations;
    snap_.reasons = false;  // a pass needs the starts only; stalled() asks for the reasons
  }

  Status load(const std::vector<SimJob>& jobs, const std::vector<SimRunning>& running);
  Status run();
  SimResult result() const;

 private:
  Status load_machine();
  Status load_job(const SimJob& job, int index);
  Status check_can_start(const Entity& e, int reservation,
                         const std::string& reservation_name) const;
  Status load_running(const SimRunning& r, int index);
  Status link_dependencies(const std::vector<SimJob>& jobs);
  Status check_cycles(size_t job_count) const;
  Result<int> lane_index(const std::string& job, const std::string& lane) const;

  void finish(int e, int64_t t);
  void make_eligible(int e);
  void dependency_met(int e);
  Status pass(int64_t t);
  // One call of the scheduler on the window (snap_.queue): its starts checked and held on
  // pass_gpus_/pass_lanes_, started_ marking them.
  Status decide(sched::Decision& decision);
  // Whether a window with this many waiting jobs can be completed (window.h, P6).
  bool completes(size_t waiting_in_window) const;
  void add_to_window(const QueueKey& key);
  Status check_starts(const sched::Decision& d, std::vector<sched::Gpu>& gpus,
                      std::vector<sched::Lane>& lanes);
  Status hold(const Entity& e, const std::vector<int>& slots, std::vector<sched::Gpu>& gpus,
              std::vector<sched::Lane>& lanes) const;
  void commit(const sched::Decision& d, std::vector<sched::Gpu>& gpus,
              std::vector<sched::Lane>& lanes, int64_t t);
  void add_running(int e, int64_t expected_end_ms);
  Status stalled();
  // Users (SimMachine::users): owner indexes, their limits, usage charged as runs end, and
  // snap_.owners brought to time t before each pass.
  int owner_of(const std::string& job);  // the job's user's index, -1 when nobody's
  void load_owners();
  void charge_owner(const Entity& e, int64_t t);
  void update_owners(int64_t t);

  const SimMachine& machine_;
  SimOptions options_;
  ScheduleFn schedule_;
  EligibleQueue queue_;
  sched::Snapshot snap_;  // the machine now; its queue is the current pass's window
  std::vector<Entity> entities_;
  std::vector<sched::PendingJob> pending_;  // per sim job, as the scheduler sees it
  std::map<std::string, int> owner_index_;
  std::vector<std::string> owners_;
  std::vector<double> owner_usage_;        // of finished runs, as of owner_usage_at_
  std::vector<int64_t> owner_usage_at_;
  bool users_matter_ = false;
  std::unordered_map<std::string, int> by_name_;
  std::vector<size_t> running_pos_;  // entity -> index into snap_.running
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<char> in_window_, started_;
  std::vector<int64_t> busy_since_;
  // pass()'s scratch: the machine after a window's starts, the window's waiting jobs, and
  // the jobs beyond it that complete it (P6).
  std::vector<sched::Gpu> pass_gpus_;
  std::vector<sched::Lane> pass_lanes_;
  std::vector<std::pair<QueueKey, QueueJobInfo>> pass_waiting_;
  std::vector<QueueKey> pass_candidates_;
  std::vector<uint64_t> pass_packed_;  // the candidates' keys as integers, to sort them
  std::vector<int> job_by_order_;      // queue order - 1 -> the job (sim job index)
  int64_t busy_ms_ = 0;
  int64_t last_end_ms_ = 0;
  size_t job_count_ = 0;
  SimStats stats_;
};

}  // namespace gpuq::sim::detail
