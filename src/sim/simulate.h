// SPDX-License-Identifier: Apache-2.0
// The simulator: replays a list of jobs on a virtual machine with the daemon's own pure
// scheduler (sched::schedule) on a virtual clock, to answer "how long will this plan take",
// "what if I had 16 GPUs" and "when will my pending job start" (the daemon's ETAs), without a
// second copy of the policy (DESIGN.md §3, "Deciding apart from doing").
//
// The clock is event-driven: at each distinct time where something happens (a submit, a job's
// end) it applies every event of that time (ends first), builds a sched::Snapshot, asks the
// scheduler (unless nothing waiting fits what is free), applies the starts, and jumps to the
// next event. Every job succeeds and runs for exactly `duration_ms`; the scheduler is only told
// `estimate_ms` (running jobs' expected ends are start + estimate).
// How a pass stays cheap with 100,000 queued jobs without changing any decision is explained
// in window.h.
//
// With users that matter (fair share between two or more users, or a limit), every pass is
// handed the whole eligible queue: the window's proofs assume the order and fates that fair
// share and limits change.
//
// Owns nothing beyond one call; pure functions of their arguments; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "sched/scheduler.h"

namespace gpuq::sim {

struct SimJob {
  std::string name;  // unique, non-empty; used for deps and in results
  int gpus = 1;
  int priority = 50;                   // lower runs first (sched's order)
  int64_t submit_ms = 0;               // when it enters the queue (>= 0)
  int64_t duration_ms = 0;             // the true run time
  int64_t estimate_ms = 0;             // what the scheduler is told; 0 = unknown
  std::vector<std::string> after;      // afterok: names of jobs that must finish first
  std::vector<std::string> after_any;  // afterany (in a simulation every job succeeds)
  std::vector<std::string> lanes;      // names of SimMachine::lanes; one unit each
  std::string reservation;             // a SimMachine::reservations name, or empty
  int64_t gpu_mem_mib = 0;             // per GPU; 0 = whole GPUs
  bool share = false;                  // may share GPUs (needs gpu_mem_mib)
  // A job whose run writes this job's input, and how far into that run (0..1) it is written:
  // this job waits until then (spec::SimulationHints). Empty: none; a name not simulated
  // counts as written.
  std::string produced_by = {};
  double produced_at_frac = 1.0;
  // How far into this job's run (0..1) its first result can be looked at; < 0: not asked.
  double first_look_frac = -1;
};

// A user's limits ([users] in config.toml): unset keys fall back to SimUsers::limits.
struct SimUserLimits {
  std::optional<int64_t> max_gpus;
  std::optional<int64_t> max_running;
};

// The users of a shared box (docs/lab.md), as the daemon treats them: fair share within a
// priority by decayed usage, and per-user limits. Usage is charged as jobs run on the virtual
// clock; each user starts at usage_gpu_ms (absent: zero).
struct SimUsers {
  // The user of each job (a SimJob's or SimRunning's name); a job not named is nobody's, never
  // limited.
  std::map<std::string, std::string> of_job;
  bool fair_share = false;
  int64_t half_life_ms = 7LL * 24 * 3'600'000;
  std::map<std::string, double> usage_gpu_ms;
  SimUserLimits limits;
  std::map<std::string, SimUserLimits> per_user;
};

struct SimMachine {
  int gpus = 0;
  std::vector<sched::Lane> lanes;       // name, capacity, excludes (`used` is ignored)
  std::vector<std::vector<int>> links;  // gpus x gpus, or empty: all equal
  int64_t gpu_memory_mib = 81920;       // per GPU
  std::vector<sched::Reservation> reservations;
  // Passed to the scheduler as they are (sched::Snapshot's fields of the same names).
  int64_t backfill_unknown_limit_ms = 0;
  int max_reservations = sched::Snapshot().max_reservations;
  SimUsers users;
};

// A job already running at time 0 (the daemon's live runs, for ETAs). It holds its slots
// exclusively and its lanes, and ends after remaining_ms, which is also what the scheduler is
// told. A SimJob may name it in `after`/`after_any`: that dependency is met when it ends.
struct SimRunning {
  std::string name;
  std::vector<int> slots;
  int64_t remaining_ms = 0;
  std::vector<std::string> lanes;
};

struct SimRow {
  std::string name;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::vector<int> gpus;       // the slots it ran on
  int64_t first_look_ms = -1;  // start + first_look_frac of its run; -1 when not asked
};

// How the simulation spent its effort (for the benchmark and for tests of the window).
struct SimStats {
  int64_t events = 0;         // distinct event times handled
  int64_t passes = 0;         // calls of the scheduler
  int64_t jobs_passed = 0;    // queue entries handed to the scheduler, all passes together
  int64_t max_window = 0;     // the largest queue handed over in one pass
  int64_t capped_passes = 0;  // passes cut at SimOptions::max_window without a proof
  int64_t completed_passes = 0;  // windows completed by their deep candidates (window.h, P6)
};

struct SimResult {
  // Time from the origin to the last end. The origin is 0 when jobs were running at time 0,
  // else the earliest submit.
  int64_t makespan_ms = 0;
  // GPU time busy (sim jobs and jobs running at time 0) / (gpus x makespan); 0 when either is 0.
  double utilization = 0;
  // Wait = start - submit, over the sim jobs (time spent waiting for dependencies counts as
  // waiting: that is what a person who submitted a plan experiences).
  double mean_wait_s = 0;
  double p95_wait_s = 0;     // nearest rank: the ceil(0.95 n)-th smallest wait
  std::vector<SimRow> jobs;  // in the order of the input
  SimStats stats;
};

using ScheduleFn = std::function<sched::Decision(const sched::Snapshot&)>;

// Knobs for tests and the benchmark; the defaults are what the daemon and `gpuq simulate` use.
struct SimOptions {
  ScheduleFn schedule;        // empty: sched::schedule
  bool full_queue = false;    // hand every eligible job to every pass (the reference for tests)
  size_t initial_window = 0;  // first window size; 0: chosen from the machine's size
  // 0: unlimited (exact). Else a pass never sees more than this many jobs, even when the
  // window's proof fails: an approximation (a deep job may start later than the daemon would
  // start it), counted in SimStats::capped_passes.
  size_t max_window = 0;
};

// Errors: a fraction (produced_at_frac, first_look_frac) outside 0..1, a job that can never start (more GPUs than its pool, an unknown lane or
// reservation, a lane that excludes GPU work on a GPU job, memory larger than a GPU), a
// dependency cycle, bad input (duplicate names, negative times, bad slots), and a scheduler
// decision that is physically impossible (a bug in sched) — each naming the job.
Result<SimResult> simulate(const std::vector<SimJob>& jobs, const SimMachine& machine,
                           sched::Policy policy, const std::vector<SimRunning>& running = {});
Result<SimResult> simulate(const std::vector<SimJob>& jobs, const SimMachine& machine,
                           sched::Policy policy, const std::vector<SimRunning>& running,
                           const SimOptions& options);

}  // namespace gpuq::sim
