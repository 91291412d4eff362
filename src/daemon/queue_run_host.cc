// SPDX-License-Identifier: Apache-2.0
// The Queue as its run lifecycle's host (run_host.h): the narrow set of the queue's operations a
// run's start, stop, settle and cleanup may use — its transactions and events, a job's state and
// scheduling record, the notes a run leaves for scheduling (why a start failed, a daemon's hold,
// a learned footprint), and the GPU slots and lanes held — and those slots' bookkeeping itself.
#include "daemon/queue.h"

#include <algorithm>

namespace gpuq::daemon {

class Queue::Host final : public RunHost {
 public:
  explicit Host(Queue& queue) : q_(queue) {}

  Status commit(const std::function<Status()>& writes) override { return q_.commit(writes); }
  void commit_later(std::function<Status()> writes) override { q_.commit_later(std::move(writes)); }
  Status add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                   nlohmann::json data) override {
    return q_.add_event(kind, job, run, std::move(data));
  }
  Status set_state(int64_t job_id, JobState from, JobState to, const std::string& reason) override {
    return q_.set_state(job_id, from, to, reason);
  }
  void retry_later(const std::string& key, std::function<void()> attempt) override {
    q_.retry_later(key, std::move(attempt));
  }

  Result<Job> load_job(int64_t id, bool with_runs) override { return q_.load_job(id, with_runs); }
  ActiveJob* active_job(int64_t id) override {
    auto it = q_.active_.find(id);
    return it == q_.active_.end() ? nullptr : &it->second;
  }
  std::vector<int> lanes_of(const JobSpec& spec) const override { return q_.lanes_of(spec); }
  void note_start_error(int64_t job_id, std::optional<std::string> why) override {
    if (!why) {
      q_.start_errors_.erase(job_id);
      return;
    }
    q_.ready_index_.mark(job_id);
    q_.start_errors_[job_id] = std::move(*why);
  }
  void note_held_by_daemon(int64_t job_id, const std::string& reason) override {
    q_.held_reasons_[job_id] = reason;
  }
  void note_finished(int64_t job_id, JobState state) override { q_.note_finished(job_id, state); }
  void note_footprint(const std::string& name) override { q_.footprint_names_.insert(name); }
  void request_pass() override { q_.request_pass(); }

  void hold_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes) override {
    q_.hold_slots(job_id, slots, lanes);
  }
  void free_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes) override {
    q_.free_slots(job_id, slots, lanes);
  }
  void set_cleaning(int slot, bool cleaning) override { q_.health_[slot].cleaning = cleaning; }
  void set_attention(int slot, nlohmann::json attention) override {
    q_.health_[slot].attention = std::move(attention);
  }

  Metrics& metrics() override { return q_.metrics_; }

 private:
  Queue& q_;
};

void Queue::hold_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes) {
  for (int slot : slots) holders_[slot].push_back(job_id);
  for (int lane : lanes) ++lane_used_[lane];
}

void Queue::free_slots(int64_t job_id, const std::vector<int>& slots, const std::vector<int>& lanes) {
  for (int slot : slots) {
    auto& h = holders_[slot];
    if (auto it = std::find(h.begin(), h.end(), job_id); it != h.end()) h.erase(it);
  }
  for (int lane : lanes) lane_used_[lane] = std::max(0, lane_used_[lane] - 1);
}

std::unique_ptr<RunLifecycle> Queue::make_lifecycle() {
  run_host_ = std::make_unique<Host>(*this);
  RunPlaces places{options_.layout, options_.boot_id, options_.job_umask};
  return std::make_unique<RunLifecycle>(world_, store_, inventory_, config_, std::move(places),
                                        *run_host_);
}

}  // namespace gpuq::daemon
