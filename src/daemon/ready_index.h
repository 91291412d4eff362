// SPDX-License-Identifier: Apache-2.0
// The queue actor's memory of readiness between passes, so that a pass costs what changed and
// not what is queued. It keeps:
//   - the ready jobs, in scheduling order (priority, queue order, id), as the scheduler's queue
//     vector itself: a pass lends it to the scheduler without copying it, and changes are
//     merged into it in place (the dropped leave, the added go in) the next time it is lent;
//   - which jobs must be evaluated again ("marked"): a job whose own inputs changed (a state
//     change, a hold or release, a move, a cancel, a condition result, a failed start), and
//     every job that depends on it, since a dependency's state decides theirs;
//   - the times at which a job's readiness changes by itself (not-before, a retry's delay, a
//     start's retry, a condition's next check), which mark it when they come;
//   - how many tracked jobs use each reservation (a reservation holds its GPUs only then).
// It does not evaluate readiness itself (readiness.h does, in the Queue's pass): whatever the
// pass decides for a job it tells the index with set_ready / set_not_ready.
// The Queue owns one; actor thread only. Plain data, no clock: tests drive it directly.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "daemon/active_job.h"
#include "sched/scheduler.h"

namespace gpuq::daemon {

class ReadyIndex {
 public:
  // Starts tracking `job` (again, after a retry): registers its dependencies and marks it.
  void add(const ActiveJob& job);
  // Room for `jobs` more added at once (a restart adds every unfinished job, and its first pass
  // finds them all ready): their sets grow once instead of one rehash at a time.
  void reserve(size_t jobs);
  // Stops tracking a job that finished: it leaves the ready jobs, and its dependents are marked.
  void remove(int64_t job_id);
  // The job's inputs changed: evaluate it, and the jobs that depend on it, in the next pass.
  void mark(int64_t job_id);
  // The job's readiness changes by itself at `at_ms` (replacing an earlier time; a later mark
  // does not cancel it: an early evaluation is harmless).
  void wake_at(int64_t job_id, int64_t at_ms);
  // The jobs to evaluate now: the marked ones and those whose wake time has come; each once, in
  // id order. Forgets them: the pass must decide each (set_ready, set_not_ready or mark).
  std::vector<int64_t> take(int64_t now_ms);
  // The earliest wake time kept, or 0 when none.
  int64_t next_wake_ms() const { return wakes_.empty() ? 0 : wakes_.front().first; }
  // Whether the next pass evaluates the job anyway: marked, or its wake time has come.
  bool due(int64_t job_id, int64_t now_ms) const;
  // Whether the job is among the ready ones under its current place in the queue.
  bool ready_as(const ActiveJob& job) const;
  bool marked(int64_t job_id) const { return marked_.count(job_id) != 0; }
  size_t marked_count() const { return marked_.size(); }

  // What the pass decided: the job may start (and what the scheduler needs of it), or not.
  void set_ready(const ActiveJob& job);
  void set_not_ready(int64_t job_id);
  bool ready(int64_t job_id) const;
  size_t ready_count() const { return in_queue_.size() + added_.size(); }

  // The ready jobs in scheduling order, moved out for a pass (changes merged first). Give it
  // back with return_queue() before the next lend; set_ready / set_not_ready may be called in
  // between and are merged at the next lend.
  std::vector<sched::PendingJob> lend_queue();
  // Whether every job of the queue as last lent has one and the same owner (PendingJob::owner):
  // the scheduler's hint (sched::Snapshot::queue_has_one_owner), kept by the merges. The
  // lent queue itself is always in priority order (Snapshot::queue_in_priority_order).
  bool lent_queue_has_one_owner() const { return owner_counts_.size() <= 1; }
  void return_queue(std::vector<sched::PendingJob> queue);

  // The tracked jobs that wait on something besides time and GPUs (another job, a file, a
  // REQUIRES or DONE_IF test): the only ones the requires watcher has anything to say about.
  const std::unordered_set<int64_t>& with_deps_or_conditions() const { return with_deps_or_conditions_; }
  // Whether any tracked job belongs to reservation `index`.
  bool reservation_in_use(int index) const;

  // A pending job as the scheduler sees it.
  static sched::PendingJob pending_job(const ActiveJob& job);

 private:
  struct Key {
    int priority = 0;
    int64_t queue_order = 0;
    int64_t id = 0;
    bool operator<(const Key& o) const {
      if (priority != o.priority) return priority < o.priority;
      return queue_order != o.queue_order ? queue_order < o.queue_order : id < o.id;
    }
    bool operator==(const Key& o) const { return id == o.id && priority == o.priority && queue_order == o.queue_order; }
  };
  static Key key_of(const sched::PendingJob& job) { return {job.priority, job.queue_order, job.id}; }
  struct Tracked {
    std::vector<int64_t> deps;  // the jobs it depends on (afterok/afterany/afternotok)
    int reservation = -1;
  };
  void drop_from_queue(int64_t job_id);
  void merge();
  void unregister(int64_t job_id);

  std::unordered_map<int64_t, Tracked> tracked_;  // only jobs with dependencies or a reservation
  std::unordered_map<int64_t, std::vector<int64_t>> dependents_;  // job → jobs that depend on it
  std::unordered_set<int64_t> marked_;
  std::vector<std::pair<int64_t, int64_t>> wakes_;  // min-heap of (at_ms, job id)
  std::unordered_map<int64_t, int64_t> wake_of_;    // each job's latest wake time (older: stale)
  std::vector<int> reservation_users_;
  std::unordered_set<int64_t> with_deps_or_conditions_;

  std::vector<sched::PendingJob> queue_;            // merged ready jobs, in order
  std::unordered_map<int64_t, Key> in_queue_;       // jobs in queue_, and their keys
  std::vector<Key> dropped_;                        // keys to drop from queue_ at the next merge
  std::unordered_map<int64_t, sched::PendingJob> added_;  // ready jobs not merged yet
  std::unordered_map<int, size_t> owner_counts_;    // owner → jobs of queue_ it owns
};

}  // namespace gpuq::daemon
