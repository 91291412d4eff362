// The queue actor: the one owner of every state change in a daemon. It keeps the pending queue
// and the live runs in memory, writes every transition together with its event in one store
// transaction, asks the pure scheduler what to start, launches runs through their shims, and
// is woken by submits, cancels and shim exits (pidfds) — never by a polling loop.
//
// Thread rules: every method except waits() must run on the actor's io_context thread. API
// threads reach it by posting work there. waits() and the event listener are the only
// cross-thread outputs: waits() returns an immutable snapshot under a mutex; the listener is
// called on the actor thread after each commit and must not block.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "base/asio.h"
#include "base/paths.h"
#include "gpu/discovery.h"
#include "model/job.h"
#include "runner/spawner.h"
#include "sched/scheduler.h"
#include "store/store.h"

namespace gpuq::daemon {

struct QueueOptions {
  HomeLayout layout;
  std::string shim_executable;   // the gpuq binary, run as `gpuq shim`
  runner::ShimSpawner* spawner = nullptr;  // forks shims cheaply; when null, exec the binary
  int64_t kill_grace_ms = 10'000;
};

// What a submit produced: the job, and whether it already existed (same name, same spec).
struct Submitted {
  Job job;
  bool existing = false;
};

// The outcome of the last scheduling pass, published for the API: why each job waits, and the
// snapshot the reasons refer to (for lane names and the like).
struct WaitList {
  sched::Snapshot snapshot;
  std::vector<sched::Wait> waits;
};

class Queue {
 public:
  Queue(boost::asio::io_context& ioc, store::Store& store, gpu::Inventory inventory,
        QueueOptions options);
  ~Queue();

  // Records the resources, re-adopts or settles runs left by an earlier daemon, loads the
  // pending queue and schedules. Call once, on the actor thread, before serving.
  Status start();
  // Records daemon.stopping; runs keep going (they belong to their shims).
  void stop();

  Result<Submitted> submit(JobSpec spec);
  Result<Job> cancel(int64_t job_id);

  // Why each pending job waits, as of the last scheduling pass. Thread-safe.
  std::shared_ptr<const WaitList> waits() const;
  // Called with the newest event seq after every commit that added events.
  void set_event_listener(std::function<void(int64_t)> listener) { listener_ = std::move(listener); }
  const gpu::Inventory& inventory() const { return inventory_; }

 private:
  struct QueueKey {
    int priority;
    int64_t order;
    int64_t id;
    auto operator<=>(const QueueKey&) const = default;
  };
  struct LiveRun {
    Run run;
    std::vector<int> slots;
    std::unique_ptr<boost::asio::posix::stream_descriptor> exit_watch;
  };

  // Runs `fn` in a transaction, then tells the listener about new events.
  Status commit(const std::function<Status()>& fn);
  Status add_event(const std::string& kind, std::optional<int64_t> job, std::optional<int> run,
                   nlohmann::json data = nlohmann::json::object());
  Status set_state(const Job& job, JobState to, const std::string& reason);

  void request_pass();
  void run_pass();
  void start_run(int64_t job_id, const std::vector<int>& slots);
  void fail_to_start(int64_t job_id, const std::vector<int>& slots, const std::string& why);
  void watch_exit(int64_t job_id);
  void on_shim_exit(int64_t job_id);
  void settle_run(const Run& run, const std::vector<int>& slots, bool while_down);
  void settle_lost_run(const Job& job, const Run& run);
  Status recover();
  void enqueue(int64_t id, int priority, int64_t order, int gpus);
  std::vector<int> slots_of(const Run& run) const;
  void free_slots(const std::vector<int>& slots);
  Result<Job> load_job(int64_t id, bool with_runs);

  boost::asio::io_context& ioc_;
  store::Store& store_;
  gpu::Inventory inventory_;
  QueueOptions options_;
  std::function<void(int64_t)> listener_;

  std::map<QueueKey, int> pending_;                  // value: GPUs needed
  std::unordered_map<int64_t, QueueKey> pending_keys_;
  std::unordered_map<int64_t, LiveRun> running_;     // by job id
  std::vector<std::optional<int64_t>> holders_;      // per resource slot: the job holding it
  int64_t next_order_ = 0;
  int64_t last_seq_ = 0;
  bool events_added_ = false;
  bool pass_requested_ = false;
  bool stopping_ = false;

  mutable std::mutex waits_mutex_;
  std::shared_ptr<const WaitList> waits_ = std::make_shared<WaitList>();
};

}  // namespace gpuq::daemon
