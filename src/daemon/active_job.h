// SPDX-License-Identifier: Apache-2.0
// What the queue actor keeps in memory about each job that is not finished (pending, held,
// blocked, running): the fields scheduling and readiness need, and no more — the command,
// script and environment stay in the store until a run starts, so 100,000 queued jobs fit in
// a few tens of MiB. Plain value; owned by the Queue; actor thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/job.h"

namespace gpuq::daemon {

// The state of a job's external conditions (wait_file, REQUIRES, DONE_IF), checked off-thread.
enum class ConditionState : uint8_t {
  kNone,      // the job has none
  kUnknown,   // not checked yet (or to be checked again)
  kChecking,  // a check is running
  kFalse,     // the last check said no; checked again at next_check_ms
  kTrue,      // all held at the last check: the job may start
};

// A container job's images (docs/containers.md, "Images"), made ready before it may take GPUs:
// checked off-thread, then, when one must be pulled, the job is first scheduled as its pull (no
// GPUs, the `net` lane when config.toml has one), and only once that pull is done as itself.
enum class ImageState : uint8_t {
  kNone,       // no image
  kUnchecked,  // to be checked (whether they are present, as the job's pull policy says)
  kChecking,   // a check is running
  kToPull,     // one must be pulled: the job is scheduled as that pull
  kPulling,    // the pull is running
  kReady,      // present: the job may be scheduled as itself
};

// The reason a person's hold records (gpuq hold). A held job with another reason was held by the
// daemon itself (too many runs in a row never began), and its wait shows that reason, which says
// what to do (Queue::held_reasons_).
inline constexpr const char* kHeldByRequest = "held by request";

// What few jobs have, kept off the per-job record (ActiveJob::rare) and allocated only for a job
// that needs it: dependencies, watcher limits of its own, external conditions, a start that
// failed for want of the machine. A job with none costs one null pointer.
struct RareJobFields {
  int64_t requires_warn_ms = -1;   // the watchers' limits from the spec (-1: the config's)
  int64_t quiet_ms = -1;
  int64_t warn_after_ms = 0;
  // External conditions (ActiveJob::conditions).
  int64_t conditions_false_since_ms = 0;
  int64_t conditions_checked_ms = 0;  // when the last check's answer came
  int64_t next_check_ms = 0;
  int64_t check_interval_ms = 0;
  std::string conditions_false_text;  // what the last check found false
  // A start that failed for want of the machine (a full disk, no processes left): the job stays
  // pending and is tried again from then, with backoff. Memory only: a restart tries at once.
  int64_t start_retry_at_ms = 0;
  int start_failures = 0;
  std::vector<Dependency> deps;    // the spec's dependencies, job dependencies with resolved ids
};

// ActiveJob's RareJobFields: reads give the defaults when the job has none; edit() makes them.
// Copies copy the fields (a pull is scheduled as a copy of its job).
class RareJobFieldsBox {
 public:
  RareJobFieldsBox() = default;
  RareJobFieldsBox(const RareJobFieldsBox& other) { *this = other; }
  RareJobFieldsBox& operator=(const RareJobFieldsBox& other) {
    if (this != &other) fields_ = other.fields_ ? std::make_unique<RareJobFields>(*other.fields_) : nullptr;
    return *this;
  }
  RareJobFieldsBox(RareJobFieldsBox&&) noexcept = default;
  RareJobFieldsBox& operator=(RareJobFieldsBox&&) noexcept = default;

  const RareJobFields& get() const { return fields_ ? *fields_ : defaults(); }
  const RareJobFields* operator->() const { return &get(); }
  RareJobFields& edit() {
    if (!fields_) fields_ = std::make_unique<RareJobFields>();
    return *fields_;
  }
  bool present() const { return fields_ != nullptr; }

 private:
  static const RareJobFields& defaults() {
    static const RareJobFields kDefaults;
    return kDefaults;
  }
  std::unique_ptr<RareJobFields> fields_;
};

// The fields are in three runs by size (8 bytes, 4, 1), so that no padding sits between them: a
// million queued jobs are a million of these.
struct ActiveJob {
  int64_t id = 0;
  int64_t queue_order = 0;
  int64_t array_id = 0;            // the array it is an element of; 0 for a job alone
  int64_t gpu_mem_mib = 0;
  int64_t estimate_ms = 0;
  int64_t timeout_ms = 0;
  int64_t retry_delay_ms = -1;
  int64_t not_before_ms = 0;       // the spec's not-before
  int64_t retry_at_ms = 0;         // a retry's delay ends then
  int64_t restart_within_ms = 0;
  RareJobFieldsBox rare;           // dependencies, watcher limits, condition checks, failed starts
  std::vector<int> lanes;          // indices into the daemon's lane table (an array's cap too)

  JobState state = JobState::kPending;
  int priority = 0;
  int gpus = 0;
  int reservation = -1;            // index into the daemon's reservations
  int owner = -1;                  // its user in the Queue's UserUsage (user_usage.h); -1: nobody
  int retries = 0;
  int failed_runs = 0;             // runs that count against `retries`
  PreemptMode preempt = PreemptMode::kNever;

  ConditionState conditions = ConditionState::kNone;
  bool share = false;
  bool has_conditions = false;     // file or REQUIRES dependencies, or DONE_IF
  bool gpu_mem_learned = false;    // gpu_mem_mib comes from earlier runs' peak, not the spec
  // A cancel that could not be recorded yet (the store failed): the job starts no more, and the
  // cancel is recorded as soon as the store works.
  bool cancel_requested = false;
  ImageState images = ImageState::kNone;
};

}  // namespace gpuq::daemon
