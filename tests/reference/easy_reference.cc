// SPDX-License-Identifier: Apache-2.0
#include "easy_reference.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

namespace gpuq::reference {
namespace {

struct Running {
  int64_t end_ms = 0;       // the real end
  int64_t expected_ms = 0;  // start + estimate: all the scheduler knows
  int gpus = 0;
};

class Simulation {
 public:
  Simulation(const std::vector<RefJob>& jobs, int gpus, RefPolicy policy)
      : jobs_(jobs), free_(gpus), policy_(policy) {}

  RefResult run() {
    std::vector<size_t> arrival(jobs_.size());
    std::iota(arrival.begin(), arrival.end(), 0);
    std::stable_sort(arrival.begin(), arrival.end(),
                     [&](size_t a, size_t b) { return jobs_[a].submit_ms < jobs_[b].submit_ms; });
    result_.start_ms.assign(jobs_.size(), -1);
    size_t next = 0;
    for (;;) {
      int64_t now = std::numeric_limits<int64_t>::max();
      if (next < arrival.size()) now = jobs_[arrival[next]].submit_ms;
      for (const Running& r : running_) now = std::min(now, r.end_ms);
      if (now == std::numeric_limits<int64_t>::max()) break;
      now_ = now;
      for (const Running& r : running_) {
        if (r.end_ms == now_) free_ += r.gpus;
      }
      std::erase_if(running_, [&](const Running& r) { return r.end_ms == now_; });
      while (next < arrival.size() && jobs_[arrival[next]].submit_ms == now_) {
        queue_.push_back(arrival[next++]);
      }
      pass();
    }
    summarise();
    return result_;
  }

 private:
  void start(size_t job) {
    const RefJob& j = jobs_[job];
    result_.start_ms[job] = now_;
    free_ -= j.gpus;
    running_.push_back({now_ + j.runtime_ms, now_ + j.estimate_ms, j.gpus});
  }

  void pass() {
    while (!queue_.empty() && jobs_[queue_.front()].gpus <= free_) {
      start(queue_.front());
      queue_.erase(queue_.begin());
    }
    if (queue_.empty() || policy_ == RefPolicy::kFifo) return;
    // The head's reservation: walk the expected ends until enough GPUs are free.
    const int need = jobs_[queue_.front()].gpus;
    std::vector<std::pair<int64_t, int>> ends;
    for (const Running& r : running_) ends.push_back({std::max(r.expected_ms, now_), r.gpus});
    std::sort(ends.begin(), ends.end());
    int64_t shadow = std::numeric_limits<int64_t>::max();
    int free_then = free_;
    for (const auto& [end, gpus] : ends) {
      if (free_then >= need && end > shadow) break;  // every end at the shadow time counts
      free_then += gpus;
      if (free_then >= need && shadow == std::numeric_limits<int64_t>::max()) shadow = end;
    }
    if (free_then < need) return;  // can never run here: nothing is protected, nothing starts
    int extra = free_then - need;
    std::vector<size_t> waiting = {queue_.front()};
    for (size_t i = 1; i < queue_.size(); ++i) {
      const RefJob& j = jobs_[queue_[i]];
      const bool ends_in_time = now_ + j.estimate_ms <= shadow;
      if (j.gpus <= free_ && (ends_in_time || j.gpus <= extra)) {
        if (!ends_in_time) extra -= j.gpus;
        start(queue_[i]);
      } else {
        waiting.push_back(queue_[i]);
      }
    }
    queue_ = std::move(waiting);
  }

  void summarise() {
    int64_t first_submit = std::numeric_limits<int64_t>::max(), last_end = 0;
    double wait_ms = 0, gpu_ms = 0;
    size_t started = 0;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      first_submit = std::min(first_submit, jobs_[i].submit_ms);
      if (result_.start_ms[i] < 0) continue;
      ++started;
      wait_ms += static_cast<double>(result_.start_ms[i] - jobs_[i].submit_ms);
      gpu_ms += static_cast<double>(jobs_[i].gpus) * static_cast<double>(jobs_[i].runtime_ms);
      last_end = std::max(last_end, result_.start_ms[i] + jobs_[i].runtime_ms);
    }
    if (started == 0) return;
    result_.makespan_ms = last_end - first_submit;
    result_.mean_wait_s = wait_ms / static_cast<double>(started) / 1000.0;
    if (result_.makespan_ms > 0 && total_gpus() > 0) {
      result_.utilization =
          gpu_ms / (static_cast<double>(total_gpus()) * static_cast<double>(result_.makespan_ms));
    }
  }

  int total_gpus() const {
    int busy = 0;
    for (const Running& r : running_) busy += r.gpus;
    return free_ + busy;
  }

  const std::vector<RefJob>& jobs_;
  int free_;
  const RefPolicy policy_;
  int64_t now_ = 0;
  std::vector<size_t> queue_;  // waiting jobs, in queue order
  std::vector<Running> running_;
  RefResult result_;
};

}  // namespace

RefResult simulate_reference(const std::vector<RefJob>& jobs, int gpus, RefPolicy policy) {
  return Simulation(jobs, gpus, policy).run();
}

}  // namespace gpuq::reference
