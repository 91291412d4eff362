// SPDX-License-Identifier: Apache-2.0
// Each user's recent GPU usage and limits ([users] in config.toml, docs/lab.md), as the pure
// scheduler's fair share and per-user limits need them (sched::Owner), and each user's count of
// unfinished jobs for max_queued at submit (user_limits.h). Users are interned: a job names its
// owner by an index (ActiveJob::owner, sched::PendingJob::owner); "" (jobs of older daemons) is
// nobody's, -1, and never limited.
//
// Usage is GPU-time decayed with the configured half-life (sched/fair_share.h): loaded from the
// store's finished runs at the daemon's start, then kept by watching the running jobs of each
// pass — a run seen before and gone now ended by now, and its time is added then; a run that
// still runs counts the time it has used so far. Owned by the Queue; actor thread only. The
// API's ETAs build one of their own from their read-only store (load()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "config/config.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace gpuq::daemon {

class UserUsage {
 public:
  explicit UserUsage(config::UsersConfig settings = {});

  // New [users] settings: limits, fair share and its half-life apply from the next pass.
  void configure(config::UsersConfig settings);
  const config::UsersConfig& settings() const { return settings_; }

  // The owner index of a login name, interned at first sight; -1 for "".
  int owner_of(const std::string& user);
  const std::string& user_of(int owner) const;
  size_t user_count() const { return users_.size(); }

  // Adds the runs in `store` that ended in the last ten half-lives (older ones count < 0.1%).
  Status load(store::Store& store, int64_t now_ms);
  // A finished run: `gpus` GPUs over [started_ms, ended_ms], charged to `owner`.
  void add_run(int owner, int gpus, int64_t started_ms, int64_t ended_ms);
  // Each pass, the running jobs (RunningJob::owner, slots, started_at_ms): a run seen before
  // and missing now has ended, and is added as ended at `now_ms`.
  void observe_running(const std::vector<sched::RunningJob>& running, int64_t now_ms);
  // A run the pass has just started (after its observe_running): seen from now on, so that a
  // run that ends before the next pass is charged all the same.
  void note_started(int64_t job, int owner, int gpus, int64_t started_ms);

  // Every interned user's usage at `now_ms` (finished runs and running ones so far) and limits,
  // indexed by owner: the scheduler's Snapshot::owners.
  std::vector<sched::Owner> owners(int64_t now_ms) const;
  // The usage of one user at `now_ms`, in GPU-ms (0 for an unknown one).
  double usage_gpu_ms(const std::string& user, int64_t now_ms) const;

  // Unfinished jobs (pending, held, blocked, running) per owner, kept by the Queue.
  void count_unfinished(int owner, int delta);
  int64_t unfinished(const std::string& user) const;
  // The limits that apply to `user`: [users.NAME]'s keys replace [users]' ones.
  config::UserLimits limits_of(const std::string& user) const;

 private:
  struct PerUser {
    std::string name;
    double usage = 0;          // decayed GPU-ms of finished runs, as of usage_at_ms
    int64_t usage_at_ms = 0;
    int64_t unfinished = 0;
  };
  struct Seen {
    int owner = -1;
    int gpus = 0;
    int64_t started_ms = 0;
  };
  double usage_at(const PerUser& user, int64_t now_ms) const;

  config::UsersConfig settings_;
  std::vector<PerUser> users_;
  std::unordered_map<std::string, int> index_;
  std::unordered_map<int64_t, Seen> running_;  // by job id
};

}  // namespace gpuq::daemon
