// SPDX-License-Identifier: Apache-2.0
// The watchers: small rules that turn silence into sightings of lasting conditions, which an
// EpisodeBook (daemon/episodes.h) turns into events. Every kind of waiting has one:
//   job.requires_wait     a REQUIRES or file: condition false, or a dependency on a held job,
//                         for longer than the job's limit (--requires-warn, [watch] requires_warn)
//   job.quiet             a running job's log has not grown for its limit (--quiet, [watch] quiet)
//   job.overdue           a run past its estimate × [watch] overdue_factor, or past --warn-after
//   job.gpu_idle          a running job's GPUs near 0 % and its log quiet for [watch] gpu_idle
//   queue.idle_with_work  GPUs free while jobs wait, for [watch] idle_with_work, naming each
//                         head job's reason
//   queue.empty           nothing running and nothing queued for [watch] empty (opt-in)
//   resource.attention    a reminder while a GPU waits for a person
// The queue actor gathers the facts (daemon/queue_watch.cc); these functions only decide.
// Pure functions of explicit facts and times; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/episodes.h"

namespace gpuq::daemon {

// What the watchers need to know of one job that is pending or running.
struct JobFacts {
  int64_t id = 0;
  bool running = false;
  // Pending: a condition found false (REQUIRES, file:), or a dependency on a held job.
  bool waiting = false;
  bool waiting_unknown = false;   // a check is running and none has said false yet
  int64_t waiting_since_ms = 0;
  std::string waiting_why;
  int64_t requires_warn_ms = 0;   // resolved: the job's, else the config's; 0 off
  // Running.
  int64_t started_ms = 0;
  int64_t log_changed_ms = 0;     // when its log last grew (its mtime); 0: no log yet
  int64_t quiet_ms = 0;           // resolved; 0 off
  int64_t estimate_ms = 0;
  int64_t warn_after_ms = 0;      // the job's own limit; 0 none
  int gpus = 0;
  int gpu_utilization = -1;       // the highest of its GPUs at the last probe; -1 unknown
  int64_t gpu_busy_ms = 0;        // the last look any of its GPUs was above the idle threshold
};

// What the watchers need to know of the queue as a whole.
struct QueueFacts {
  int free_gpus = 0;              // usable and held by no run, no cleanup, no person
  int waiting_jobs = 0;           // pending jobs that need GPUs (not held, not deferred)
  bool draining = false;
  bool empty = false;             // no job pending, held, blocked or running
  // The first few waiting jobs in queue order, with why each waits.
  std::vector<std::pair<int64_t, std::string>> heads;
  // GPUs in attention: name and since.
  std::vector<std::pair<std::string, int64_t>> attention;
};

std::vector<Sighting> watch_job(const JobFacts& job, const WatchConfig& config, int64_t now_ms);
std::vector<Sighting> watch_queue(const QueueFacts& queue, const WatchConfig& config);

// The episode key of a job watcher ("job.quiet:12"), for tests and lookups.
std::string job_key(std::string_view kind, int64_t job_id);

}  // namespace gpuq::daemon
