// SPDX-License-Identifier: Apache-2.0
// A stand-in for the local daemon behind fleet::Executor, for unit tests of the agent: jobs
// are records a test moves from state to state, the spare GPUs are a number the test sets, and
// events are kept in order. No processes, no clock.
// Not thread-safe: one test thread drives it and the agent.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fleet/executor.h"

namespace gpuq::fleet::testing {

class FakeExecutor : public Executor {
 public:
  struct Recorded {
    std::string kind;
    std::optional<int64_t> job;
    nlohmann::json data;
  };

  explicit FakeExecutor(int gpus) : gpus_(gpus) {}

  Result<int64_t> submit(JobSpec spec) override {
    if (refuse_submits) return fail(Code::kInvalidArgument, "refused by the test");
    int64_t id = next_id_++;
    LocalJob job;
    job.id = id;
    specs[id] = std::move(spec);
    jobs[id] = job;
    return id;
  }
  Result<LocalJob> job(int64_t id) override {
    auto it = jobs.find(id);
    if (it == jobs.end()) return fail(Code::kNotFound, "no such job");
    return it->second;
  }
  Status cancel(int64_t id) override {
    cancelled.push_back(id);
    auto it = jobs.find(id);
    if (it != jobs.end() && !is_terminal(it->second.state)) it->second.state = JobState::kCancelled;
    return ok();
  }
  Result<LocalMachine> machine() override {
    LocalMachine machine;
    int used = 0;
    for (const auto& [id, job] : jobs) {
      if (!is_terminal(job.state)) used += specs[id].gpus;
    }
    for (int i = 0; i < gpus_; ++i) {
      machine.gpus.push_back({"gpu" + std::to_string(i), "fake", 81'920, i < used});
    }
    machine.spare_gpus = std::max(gpus_ - used, 0);
    machine.workdir_free_bytes = workdir_free_bytes;
    machine.shm_free_bytes = shm_free_bytes;
    return machine;
  }
  Status reserve_gpu(const std::string& reservation, int index) override {
    if (index < 0 || index >= gpus_) return fail(Code::kInvalidArgument, "no such GPU");
    reserved[reservation] = index;
    return ok();
  }
  void event(const std::string& kind, std::optional<int64_t> job, nlohmann::json data) override {
    events.push_back({kind, job, std::move(data)});
  }

  // Ends local job `id` as a run that exited with `exit_code`, its log in `log_path`.
  void end(int64_t id, int exit_code, const std::string& log_path = "") {
    auto& job = jobs.at(id);
    job.state = exit_code == 0 ? JobState::kSucceeded : JobState::kFailed;
    job.started = true;
    job.exit_code = exit_code;
    job.runs = 1;
    if (!log_path.empty()) job.logs = {log_path};
  }
  int count(const std::string& kind) const {
    int n = 0;
    for (const auto& e : events) n += e.kind == kind;
    return n;
  }

  std::map<int64_t, LocalJob> jobs;
  std::map<int64_t, JobSpec> specs;
  std::vector<int64_t> cancelled;
  std::vector<Recorded> events;
  bool refuse_submits = false;
  int64_t workdir_free_bytes = -1;     // what machine() reports
  int64_t shm_free_bytes = -1;
  std::map<std::string, int> reserved;  // reserve_gpu(): reservation → GPU index

 private:
  int gpus_;
  int64_t next_id_ = 1;
};

}  // namespace gpuq::fleet::testing
