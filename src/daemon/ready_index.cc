// SPDX-License-Identifier: Apache-2.0
#include "daemon/ready_index.h"

#include <algorithm>
#include <functional>

namespace gpuq::daemon {

sched::PendingJob ReadyIndex::pending_job(const ActiveJob& job) {
  sched::PendingJob p;
  p.id = job.id;
  p.priority = job.priority;
  p.queue_order = job.queue_order;
  p.gpus = job.gpus;
  p.lanes = job.lanes;
  p.gpu_mem_mib = job.gpu_mem_mib;
  p.share = job.share;
  p.estimate_ms = job.estimate_ms;
  p.timeout_ms = job.timeout_ms;
  p.reservation = job.reservation;
  p.owner = job.owner;
  return p;
}

void ReadyIndex::add(const ActiveJob& job) {
  unregister(job.id);
  Tracked t;
  t.reservation = job.reservation;
  for (const Dependency& dep : job.rare->deps) {
    if (dep.kind == Dependency::Kind::kFile || dep.kind == Dependency::Kind::kRequires) continue;
    if (std::find(t.deps.begin(), t.deps.end(), dep.job_id) != t.deps.end()) continue;
    t.deps.push_back(dep.job_id);
    dependents_[dep.job_id].push_back(job.id);
  }
  if (t.reservation >= 0) {
    if (reservation_users_.size() <= static_cast<size_t>(t.reservation)) {
      reservation_users_.resize(t.reservation + 1, 0);
    }
    ++reservation_users_[t.reservation];
  }
  if (!t.deps.empty() || job.has_conditions) with_deps_or_conditions_.insert(job.id);
  // Kept only to be undone by unregister(): a job with neither (most of a deep queue) costs
  // no entry.
  if (!t.deps.empty() || t.reservation >= 0) tracked_[job.id] = std::move(t);
  mark(job.id);
}

void ReadyIndex::unregister(int64_t job_id) {
  auto it = tracked_.find(job_id);
  if (it == tracked_.end()) return;
  for (int64_t dep : it->second.deps) {
    auto d = dependents_.find(dep);
    if (d == dependents_.end()) continue;
    std::erase(d->second, job_id);
    if (d->second.empty()) dependents_.erase(d);
  }
  if (it->second.reservation >= 0) --reservation_users_[it->second.reservation];
  with_deps_or_conditions_.erase(job_id);
  tracked_.erase(it);
}

void ReadyIndex::remove(int64_t job_id) {
  unregister(job_id);
  set_not_ready(job_id);
  marked_.erase(job_id);
  wake_of_.erase(job_id);
  // Its dependents see its final state now.
  if (auto d = dependents_.find(job_id); d != dependents_.end()) {
    for (int64_t dependent : d->second) marked_.insert(dependent);
  }
}

void ReadyIndex::mark(int64_t job_id) {
  marked_.insert(job_id);
  if (auto d = dependents_.find(job_id); d != dependents_.end()) {
    for (int64_t dependent : d->second) marked_.insert(dependent);
  }
}

void ReadyIndex::wake_at(int64_t job_id, int64_t at_ms) {
  int64_t& latest = wake_of_[job_id];
  if (latest == at_ms) return;  // evaluated again while it waits for the same time
  latest = at_ms;
  wakes_.emplace_back(at_ms, job_id);
  std::push_heap(wakes_.begin(), wakes_.end(), std::greater<>());
}

std::vector<int64_t> ReadyIndex::take(int64_t now_ms) {
  while (!wakes_.empty() && wakes_.front().first <= now_ms) {
    auto [at, id] = wakes_.front();
    if (auto latest = wake_of_.find(id); latest != wake_of_.end() && latest->second == at) {
      marked_.insert(id);
      wake_of_.erase(latest);
    }
    std::pop_heap(wakes_.begin(), wakes_.end(), std::greater<>());
    wakes_.pop_back();
  }
  std::vector<int64_t> due(marked_.begin(), marked_.end());
  // clear() zeroes every bucket, and a set that once held the whole queue (a daemon's start,
  // a big plan) keeps its buckets: a pass that takes one job must not pay for them.
  if (marked_.bucket_count() > 4 * due.size() + 64) {
    marked_ = {};
  } else if (!due.empty()) {
    marked_.clear();
  }
  std::sort(due.begin(), due.end());
  return due;
}

bool ReadyIndex::ready(int64_t job_id) const {
  return in_queue_.count(job_id) != 0 || added_.count(job_id) != 0;
}

bool ReadyIndex::due(int64_t job_id, int64_t now_ms) const {
  if (marked_.count(job_id) != 0) return true;
  auto wake = wake_of_.find(job_id);
  return wake != wake_of_.end() && wake->second <= now_ms;
}

bool ReadyIndex::ready_as(const ActiveJob& job) const {
  Key key{job.priority, job.queue_order, job.id};
  if (auto it = added_.find(job.id); it != added_.end()) return key_of(it->second) == key;
  auto it = in_queue_.find(job.id);
  return it != in_queue_.end() && it->second == key;
}

void ReadyIndex::drop_from_queue(int64_t job_id) {
  auto it = in_queue_.find(job_id);
  if (it == in_queue_.end()) return;
  dropped_.push_back(it->second);
  in_queue_.erase(it);
}

void ReadyIndex::set_ready(const ActiveJob& job) {
  // Its fields (order, priority, needs) may have changed since it was merged: take it again.
  drop_from_queue(job.id);
  added_[job.id] = pending_job(job);
}

void ReadyIndex::set_not_ready(int64_t job_id) {
  drop_from_queue(job_id);
  added_.erase(job_id);
}

void ReadyIndex::reserve(size_t jobs) {
  marked_.reserve(marked_.size() + jobs);
  added_.reserve(added_.size() + jobs);
}

void ReadyIndex::merge() {
  if (dropped_.empty() && added_.empty()) return;
  std::sort(dropped_.begin(), dropped_.end());
  std::vector<sched::PendingJob> added;
  added.reserve(added_.size());
  in_queue_.reserve(in_queue_.size() + added_.size());
  for (auto& [id, job] : added_) {
    in_queue_[id] = key_of(job);
    ++owner_counts_[job.owner];
    added.push_back(std::move(job));
  }
  std::sort(added.begin(), added.end(),
            [](const sched::PendingJob& a, const sched::PendingJob& b) { return key_of(a) < key_of(b); });
  // In place, without a second buffer (a million ready jobs are 88 MB of PendingJob): the
  // dropped keys leave by one forward compaction from the first of them, then the added jobs
  // go in by one backward merge down to the first of them. Jobs before both are not touched.
  if (!dropped_.empty()) {
    auto first = std::lower_bound(
        queue_.begin(), queue_.end(), dropped_.front(),
        [](const sched::PendingJob& job, const Key& key) { return key_of(job) < key; });
    auto out = first;
    auto drop = dropped_.begin();
    for (auto in = first; in != queue_.end(); ++in) {
      Key key = key_of(*in);
      while (drop != dropped_.end() && *drop < key) ++drop;
      if (drop != dropped_.end() && *drop == key) {
        if (auto owner = owner_counts_.find(in->owner);
            owner != owner_counts_.end() && --owner->second == 0) {
          owner_counts_.erase(owner);
        }
        continue;
      }
      if (out != in) *out = std::move(*in);
      ++out;
    }
    queue_.erase(out, queue_.end());
  }
  if (!added.empty()) {
    size_t old_size = queue_.size();
    size_t size = old_size + added.size();
    // With room to grow (a sixteenth): a queue that grows by one job at a time must not
    // reallocate (and fault in a fresh buffer) at every merge.
    if (queue_.capacity() < size) queue_.reserve(size + size / 16 + 64);
    queue_.resize(size);
    size_t from = old_size, to = size, add = added.size();
    while (add > 0) {
      if (from > 0 && key_of(added[add - 1]) < key_of(queue_[from - 1])) {
        queue_[--to] = std::move(queue_[--from]);
      } else {
        queue_[--to] = std::move(added[--add]);
      }
    }
  }
  dropped_.clear();
  added_.clear();
}

std::vector<sched::PendingJob> ReadyIndex::lend_queue() {
  merge();
  return std::move(queue_);
}

void ReadyIndex::return_queue(std::vector<sched::PendingJob> queue) {
  queue_ = std::move(queue);
}

bool ReadyIndex::reservation_in_use(int index) const {
  return index >= 0 && static_cast<size_t>(index) < reservation_users_.size() &&
         reservation_users_[index] > 0;
}

}  // namespace gpuq::daemon
