// SPDX-License-Identifier: Apache-2.0
// `gpuq cancel|hold|release|retry NAME` for an array or grid: the action on every element it
// applies to, in one transaction, so that the array changes at once or not at all
// (docs/sweeps.md, "One unit"). A cancel also signals the running elements, each recorded as a
// single cancel of a running job is. A retry `from_start` runs every step of each element with
// steps again, as `gpuq retry --from-start` of one job does (Queue::retry).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "daemon/queue.h"
#include "daemon/readiness.h"

namespace gpuq::daemon {
namespace {

std::string_view verb_of(ArrayAction action) {
  switch (action) {
    case ArrayAction::kCancel: return "cancel";
    case ArrayAction::kHold: return "hold";
    case ArrayAction::kRelease: return "release";
    case ArrayAction::kRetry:
    case ArrayAction::kRetryFailed: return "retry";
  }
  return "";
}

// The states of the elements an action applies to.
std::vector<JobState> states_for(ArrayAction action) {
  using S = JobState;
  switch (action) {
    case ArrayAction::kCancel: return {S::kPending, S::kHeld, S::kRunning, S::kBlocked};
    case ArrayAction::kHold: return {S::kPending};
    case ArrayAction::kRelease: return {S::kHeld};
    case ArrayAction::kRetry: return {S::kFailed, S::kCancelled, S::kBlocked};
    case ArrayAction::kRetryFailed: return {S::kFailed};
  }
  return {};
}

// "pending", "pending or held", "pending, held or running".
std::string either(const std::vector<JobState>& states) {
  std::string text;
  for (size_t i = 0; i < states.size(); ++i) {
    if (i > 0) text += i + 1 == states.size() ? " or " : ", ";
    text += to_string(states[i]);
  }
  return text;
}

}  // namespace

Result<ArrayActed> Queue::act_on_array(int64_t array_id, ArrayAction action, bool from_start, bool with_jobs) {
  auto array = store_.find_array(array_id);
  if (!array) return tl::unexpected(array.error());
  if (!*array) return fail(Code::kNotFound, fmt::format("no array {}", array_id));
  std::vector<JobState> states = states_for(action);
  bool retry = action == ArrayAction::kRetry || action == ArrayAction::kRetryFailed;
  // A retry reads their specs and runs (without environments); a cancel, hold or release only
  // their ids and states (for a million elements, a million pairs rather than a million specs).
  std::vector<Job> targets;
  std::vector<std::pair<int64_t, JobState>> states_now;
  if (retry) {
    auto read = store_.array_jobs(array_id, states, /*with_runs=*/true, /*with_env=*/false);
    if (!read) return tl::unexpected(read.error());
    targets = std::move(*read);
  } else {
    auto read = store_.array_job_states(array_id, states);
    if (!read) return tl::unexpected(read.error());
    states_now = std::move(*read);
  }
  // An element the store has in one state but memory in another (a cancel not yet recorded)
  // is not acted on: memory is what the scheduler follows.
  auto live = [&](int64_t id) -> ActiveJob* {
    auto it = active_.find(id);
    return it == active_.end() || it->second.cancel_requested ? nullptr : &it->second;
  };
  ArrayActed acted;
  std::vector<int64_t> ids;     // acted on, in this transaction
  std::vector<int64_t> others;  // acted on outside it (running elements asked to stop)
  if (action == ArrayAction::kCancel) {
    for (const auto& [id, state] : states_now) {
      ActiveJob* a = live(id);
      if (!a) continue;
      (a->state == JobState::kRunning ? others : ids).push_back(id);
    }
  } else if (!retry) {
    JobState from = action == ArrayAction::kHold ? JobState::kPending : JobState::kHeld;
    for (const auto& [id, state] : states_now) {
      if (ActiveJob* a = live(id); a && a->state == from) ids.push_back(id);
    }
  } else {
    for (const Job& job : targets) {
      if (job.state == JobState::kBlocked) {
        ActiveJob* a = live(job.id);
        if (!a) continue;
        auto verdict = evaluate_job_dependencies(*a, [this](int64_t id) { return state_of(id); });
        if (verdict.kind == DependencyVerdict::Kind::kImpossible) {
          acted.refused.push_back({job.id, fmt::format("job {} stays blocked: {}", job.id, verdict.text())});
          continue;
        }
      }
      ids.push_back(job.id);
    }
  }
  if (ids.empty() && others.empty()) {
    if (!acted.refused.empty()) {
      return fail(Code::kConflict, fmt::format("no element of array {} can be retried: {}", (*array)->name,
                                               acted.refused.front().second));
    }
    return fail(Code::kConflict, fmt::format("array {} has no element to {}: none is {}", (*array)->name,
                                             verb_of(action), either(states)));
  }
  nlohmann::json tag = {{"array", array_id}};
  std::unordered_map<int64_t, const Job*> by_id;  // a retry's elements
  for (const Job& job : targets) by_id[job.id] = &job;
  auto committed = commit([&]() -> Status {
    for (int64_t id : ids) {
      if (action == ArrayAction::kCancel) {
        if (auto st = set_state(id, active_.at(id).state, JobState::kCancelled, "cancelled by request"); !st) return st;
        if (auto st = add_event("job.cancelled", id, std::nullopt, tag); !st) return st;
      } else if (action == ArrayAction::kHold) {
        if (auto st = set_state(id, JobState::kPending, JobState::kHeld, kHeldByRequest); !st) return st;
        if (auto st = add_event("job.held", id, std::nullopt, tag); !st) return st;
      } else if (action == ArrayAction::kRelease) {
        if (auto st = set_state(id, JobState::kHeld, JobState::kPending, ""); !st) return st;
        if (auto st = add_event("job.released", id, std::nullopt, tag); !st) return st;
      } else {
        const Job& job = *by_id.at(id);
        JobState from = job.state;
        if (auto st = set_state(id, from, JobState::kPending, ""); !st) return st;
        if (auto st = store_.set_retry_at(id, 0); !st) return st;
        if (auto st = store_.set_retry_base(id, job.runs.empty() ? 0 : job.runs.back().number); !st) return st;
        nlohmann::json data = {{"from", to_string(from)}, {"array", array_id}};
        if (!job.spec.steps.empty()) {
          if (auto st = store_.set_steps_from_start(id, from_start); !st) return st;
          data["from_start"] = from_start;
        }
        if (auto st = add_event("job.retried", id, std::nullopt, data); !st) return st;
      }
    }
    return ok();
  });
  if (!committed && action != ArrayAction::kCancel) return tl::unexpected(unavailable(committed.error()));
  for (int64_t id : ids) {
    switch (action) {
      case ArrayAction::kCancel:
        if (committed) {
          note_finished(id, JobState::kCancelled);
        } else {
          // The cancel holds: the element never starts, and is recorded once the store can be.
          active_.at(id).cancel_requested = true;
          ready_index_.mark(id);
          retry_later(fmt::format("cancel:{}", id), [this, id] { record_cancel(id); });
          acted.recorded = false;
        }
        break;
      case ArrayAction::kHold: active_.at(id).state = JobState::kHeld; break;
      case ArrayAction::kRelease:
        active_.at(id).state = JobState::kPending;
        held_reasons_.erase(id);
        break;
      case ArrayAction::kRetry:
      case ArrayAction::kRetryFailed: {
        Job job = *by_id.at(id);
        job.state = JobState::kPending;
        job.retry_at_ms = 0;
        job.retry_base = job.runs.empty() ? 0 : job.runs.back().number;  // the budget starts afresh
        auto active = make_active(id, job);
        if (!active) return tl::unexpected(active.error());
        track(std::move(*active));
        break;
      }
    }
  }
  // The running elements, as a single cancel stops a running job (Queue::cancel).
  for (int64_t id : others) {
    if (!runs_->find(id)) continue;
    if (!runs_->cancel(id, tag)) acted.recorded = false;
  }
  if (retry) unblock_now();
  request_pass();
  std::unordered_set<int64_t> wanted(ids.begin(), ids.end());
  wanted.insert(others.begin(), others.end());
  if (!with_jobs) {
    // By id, the order the jobs would have.
    acted.ids.assign(wanted.begin(), wanted.end());
    std::sort(acted.ids.begin(), acted.ids.end());
    return acted;
  }
  // The elements acted on as they are now, in one read.
  auto now = store_.array_jobs(array_id, {}, true, /*with_env=*/false);
  if (!now) return tl::unexpected(now.error());
  for (Job& job : *now) {
    if (wanted.count(job.id)) {
      acted.ids.push_back(job.id);
      acted.jobs.push_back(std::move(job));
    }
  }
  return acted;
}

}  // namespace gpuq::daemon
