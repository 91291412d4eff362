// SPDX-License-Identifier: Apache-2.0
// The Queue's job arrays and grids (docs/sweeps.md): one request queues every element, checked
// once and written in one transaction, and an array with a cap holds a lane of its own so that
// the scheduler never runs more of its elements at once.
#include <fmt/format.h>

#include <cstdio>
#include <string_view>
#include <unordered_set>

#include "daemon/queue.h"
#include "daemon/user_limits.h"
#include "model/spec_json.h"
#include "sched/bits.h"
#include "spec/sweep_specs.h"

namespace gpuq::daemon {

Result<bool> Queue::same_array_work(const JobArray& array, const std::vector<int64_t>& ids,
                                    const JobSpec& base, const JobSpec& first_element) {
  if (!array.base.empty()) {
    auto stored = spec_from_json(nlohmann::json::parse(array.base, nullptr, false), SpecOrigin::kStore);
    return stored && same_work(*stored, base);
  }
  // An array of schema 11 kept no base: its first element stands for it, while it is kept.
  if (ids.empty()) return false;
  auto job = store_.find_job(ids.front(), false);
  if (!job) return tl::unexpected(job.error());
  return *job && same_work((*job)->spec, first_element);
}

Result<SweepSubmitted> Queue::submit_sweep(SweepRequest request) {
  if (stopping_) return fail(Code::kUnavailable, "the daemon is shutting down; submit again later");
  JobSpec& base = request.base;
  const spec::Sweep& sweep = request.sweep;
  if (sweep.size() == 0) return fail(Code::kInvalidArgument, "an array needs at least one element");
  if (base.name.find_first_of("[]") != std::string::npos) {
    return fail(Code::kInvalidArgument,
                fmt::format("array name '{}': an array's name cannot hold [ or ] (its elements are "
                            "NAME[3], NAME[lr=3e-4])",
                            base.name));
  }
  // The elements differ only in name, arguments and variables: checked once, as their base.
  if (auto st = check_and_resolve(base, nullptr); !st) return tl::unexpected(st.error());
  std::string name = base.name;
  if (name.empty()) {
    auto next = store_.next_array_id();
    if (!next) return tl::unexpected(next.error());
    name = fmt::format("array-{}", *next);
  }
  // Each element's spec is made as it is written: a sweep of 10,000 never holds 10,000
  // environments at once.
  std::vector<spec::SweepElement> elements = spec::sweep_elements(sweep);
  std::vector<std::string> names;
  names.reserve(elements.size());
  for (const auto& element : elements) names.push_back(name + element.suffix());

  base.name = name;
  auto existing = queued_array(name, request.sweep_json, base, spec::element_spec(base, name, elements.front()));
  if (!existing) return tl::unexpected(existing.error());
  if (*existing) {
    const JobArray& array = (*existing)->array;
    if ((*existing)->same) {
      return SweepSubmitted{array, std::move((*existing)->element_ids), std::move(names), true};
    }
    return fail(Code::kConflict,
                fmt::format("an array named '{}' already exists (array {}, {} elements) with a "
                            "different sweep or spec; choose another name",
                            name, array.id, array.size));
  }
  auto job_named = store_.find_job_by_name(name, false);
  if (!job_named) return tl::unexpected(job_named.error());
  if (*job_named) {
    return fail(Code::kConflict, fmt::format("a job named '{}' exists (job {}); an array needs a "
                                             "name that no job has",
                                             name, (*job_named)->id));
  }
  // Every name an element would take, in one read of the names that start with "NAME[".
  auto taken = store_.jobs_named_with_prefix(name + "[");
  if (!taken) return tl::unexpected(taken.error());
  if (!taken->empty()) {
    std::unordered_set<std::string_view> wanted(names.begin(), names.end());
    for (const auto& [id, taken_name] : *taken) {
      if (!wanted.count(taken_name)) continue;
      return fail(Code::kConflict, fmt::format("a job named '{}' exists (job {}); choose another "
                                               "name for the array",
                                               taken_name, id));
    }
  }
  if (sweep.max_running > 0) {
    // As array_lane() will take one once the elements are queued: a free lane whose units are
    // all back, or room for a new one. Refused here, before anything is written.
    bool free = false;
    for (size_t k = 0; k < array_lanes_.size(); ++k) {
      free = free || (array_lanes_[k].array_id == 0 && lane_used_[config_.lanes.size() + k] == 0);
    }
    if (!free && config_.lanes.size() + array_lanes_.size() >= sched::kMaxLanes) {
      return fail(Code::kUnavailable,
                  fmt::format("{} arrays with a cap (%MAX) are unfinished, as many as the "
                              "scheduler can count beside config.toml's lanes; submit this one "
                              "without a cap, or when one of them has finished",
                              array_lanes_.size()));
    }
  }

  if (auto st = check_max_queued(users_, base.user, static_cast<int64_t>(elements.size())); !st) {
    return tl::unexpected(st.error());
  }
  JobArray array{0, name, request.sweep_json, sweep.max_running, static_cast<int>(sweep.size()),
                 world_.now_ms(), spec_to_json(base).dump()};
  // What the queue keeps of each element, made as its row is written; tracked once all are.
  std::vector<ActiveJob> inserted;
  inserted.reserve(elements.size());
  int64_t order_before = next_order_;
  // Each element's row keeps only its own variables; the environment they share is the array's
  // (arrays.base), put back under them whenever an element is read (Store::find_job ...).
  JobSpec shared = base;
  shared.env = {};
  auto committed = commit([&]() -> Status {
    auto id = store_.insert_array(array);
    if (!id) return tl::unexpected(id.error());
    array.id = *id;
    inserted.clear();
    for (const auto& element : elements) {
      Job job;
      job.spec = spec::element_spec(shared, name, element);
      job.array_id = array.id;
      job.state = job.spec.hold ? JobState::kHeld : JobState::kPending;
      job.submitted_at_ms = array.submitted_at_ms;
      next_order_ += kOrderStep;
      job.queue_order = next_order_;
      auto job_id = store_.insert_job(job);
      if (!job_id) return tl::unexpected(job_id.error());
      job.id = *job_id;
      if (auto st = make_job_dir(job); !st) return st;
      nlohmann::json data = {{"gpus", job.spec.gpus}, {"priority", job.spec.priority},
                             {"name", job.spec.name}, {"array", array.id}};
      if (job.spec.hold) data["held"] = true;
      if (auto st = add_event("job.submitted", job.id, std::nullopt, data); !st) return st;
      // Its ActiveJob, not the Job: a sweep of a million never holds a million specs.
      inserted.push_back(active_of(job.id, job));
    }
    nlohmann::json data = {{"array", array.id}, {"name", array.name}, {"size", array.size}};
    if (array.max_running > 0) data["max_running"] = array.max_running;
    return add_event("array.submitted", std::nullopt, std::nullopt, data);
  });
  if (!committed) {
    next_order_ = order_before;
    return tl::unexpected(unavailable(committed.error()));
  }
  SweepSubmitted out{array, {}, std::move(names), false};
  out.element_ids.reserve(inserted.size());
  // The array's lane (one for its cap, taken as its first element is tracked): its elements
  // share it.
  auto lane = array_lane(array.id);
  if (!lane) {
    // Refused before anything was written (above) when no lane was free: only the store can
    // fail here. Its elements stay untracked, as a restart would find them queued.
    std::fprintf(stderr, "gpuq daemon: array %lld is queued but not scheduled until a restart: %s\n",
                 static_cast<long long>(array.id), lane.error().message.c_str());
  }
  for (ActiveJob& active : inserted) {
    out.element_ids.push_back(active.id);
    if (!lane) continue;
    if (*lane) active.lanes.push_back(**lane);
    track(std::move(active));
  }
  inserted = {};
  // A big sweep leaves megabytes of freed rows and JSON in malloc's arenas, and the pass it asks
  // for, which merges every element into the ready queue, more: give them back after that pass.
  if (out.element_ids.size() > 1000) trim_after_pass_ = true;
  request_pass();
  return out;
}

Result<std::optional<int>> Queue::array_lane(int64_t array_id) {
  if (array_id == last_uncapped_array_) return std::optional<int>();
  for (size_t k = 0; k < array_lanes_.size(); ++k) {
    if (array_lanes_[k].array_id == array_id) return static_cast<int>(config_.lanes.size() + k);
  }
  auto array = store_.find_array(array_id);
  if (!array) return tl::unexpected(array.error());
  if (!*array) return std::optional<int>();
  if ((*array)->max_running <= 0) {
    last_uncapped_array_ = array_id;
    return std::optional<int>();
  }
  ArrayLane lane{array_id, fmt::format("{}%{}", (*array)->name, (*array)->max_running),
                 (*array)->max_running, 0};
  // A free lane whose units are all back (a run in cleanup may still hold one).
  for (size_t k = 0; k < array_lanes_.size(); ++k) {
    if (array_lanes_[k].array_id == 0 && lane_used_[config_.lanes.size() + k] == 0) {
      array_lanes_[k] = std::move(lane);
      return static_cast<int>(config_.lanes.size() + k);
    }
  }
  if (config_.lanes.size() + array_lanes_.size() >= sched::kMaxLanes) {
    return fail(Code::kUnavailable,
                fmt::format("array '{}' needs a lane for its cap, and all {} the scheduler can "
                            "count are in use",
                            (*array)->name, sched::kMaxLanes));
  }
  array_lanes_.push_back(std::move(lane));
  lane_used_.resize(config_.lanes.size() + array_lanes_.size(), 0);
  return static_cast<int>(lane_used_.size() - 1);
}

Status Queue::note_element_finished(int64_t array_id) {
  auto unfinished = store_.array_unfinished(array_id);
  if (!unfinished) return tl::unexpected(unfinished.error());
  if (*unfinished) return ok();
  auto array = store_.find_array(array_id);
  if (!array) return tl::unexpected(array.error());
  if (!*array) return ok();
  auto counts = store_.array_counts(array_id);
  if (!counts) return tl::unexpected(counts.error());
  nlohmann::json by_state = nlohmann::json::object();
  for (const auto& [state, n] : *counts) by_state[std::string(to_string(state))] = n;
  return add_event("array.finished", std::nullopt, std::nullopt,
                   {{"array", array_id}, {"name", (*array)->name}, {"size", (*array)->size},
                    {"counts", by_state}});
}

void Queue::untrack_array_element(int64_t array_id) {
  for (auto& lane : array_lanes_) {
    if (lane.array_id != array_id) continue;
    if (--lane.tracked <= 0) lane = ArrayLane{};  // every element finished: the lane is free
  }
}

}  // namespace gpuq::daemon
