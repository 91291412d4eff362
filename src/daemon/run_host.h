// SPDX-License-Identifier: Apache-2.0
// What the run lifecycle (run_lifecycle.h) needs of the queue actor that drives it, and nothing
// more: the actor's transactions and their events, a job's state and its in-memory record, the
// GPU slots and lanes a run holds, and the few notes a run leaves for scheduling. The Queue
// implements it (queue_run_host.cc); a unit test of the lifecycle implements it with a small
// fake over a real store.
//
// Thread rules: called on the actor's thread only, never from another thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "daemon/active_job.h"
#include "daemon/metrics.h"
#include "model/job.h"

namespace gpuq::daemon {

class RunHost {
 public:
  virtual ~RunHost() = default;

  // --- transactions (docs/architecture.md, "Failed writes, in one place") ---
  // Runs `writes` and the events they add in one transaction; a failure is noted as store
  // trouble and the caller leaves memory as the store is.
  virtual Status commit(const std::function<Status()>& writes) = 0;
  // Writes without events that may ride in the next commit (a restart repairs their loss).
  virtual void commit_later(std::function<Status()> writes) = 0;
  // Inside a commit: an event, and a job's state change (checked for legality).
  virtual Status add_event(const std::string& kind, std::optional<int64_t> job,
                           std::optional<int> run, nlohmann::json data) = 0;
  virtual Status set_state(int64_t job_id, JobState from, JobState to,
                           const std::string& reason) = 0;
  // Keeps `attempt` under `key` to be run again with backoff once the store may work.
  virtual void retry_later(const std::string& key, std::function<void()> attempt) = 0;

  // --- jobs ---
  virtual Result<Job> load_job(int64_t id, bool with_runs) = 0;
  // The job's scheduling record while it is unfinished; null when the queue does not track it.
  virtual ActiveJob* active_job(int64_t id) = 0;
  // The lane indices a spec takes (config.toml's lanes).
  virtual std::vector<int> lanes_of(const JobSpec& spec) const = 0;
  // Why the job's last start failed (shown as its wait), or, with nullopt, that it started.
  virtual void note_start_error(int64_t job_id, std::optional<std::string> why) = 0;
  // The daemon held the job itself, for `reason` (shown as its wait).
  virtual void note_held_by_daemon(int64_t job_id, const std::string& reason) = 0;
  // The job reached a final state: the queue forgets it and decides its dependents again.
  virtual void note_finished(int64_t job_id, JobState state) = 0;
  // A job of this name succeeded with a measured peak: later submits may learn its footprint.
  virtual void note_footprint(const std::string& name) = 0;
  virtual void request_pass() = 0;

  // --- GPUs and lanes ---
  virtual void hold_slots(int64_t job_id, const std::vector<int>& slots,
                          const std::vector<int>& lanes) = 0;
  virtual void free_slots(int64_t job_id, const std::vector<int>& slots,
                          const std::vector<int>& lanes) = 0;
  // A slot's cleanup is under way (or no longer), and a slot put in attention (null: none).
  virtual void set_cleaning(int slot, bool cleaning) = 0;
  virtual void set_attention(int slot, nlohmann::json attention) = 0;

  virtual Metrics& metrics() = 0;
};

}  // namespace gpuq::daemon
