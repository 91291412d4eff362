// SPDX-License-Identifier: Apache-2.0
// The Queue's job arrays inside plans (docs/sweeps.md, queue_plan.cc): whether the store has a
// plan's array already (the lookup submit_sweep makes too: queued_array), writing an array's row
// and its elements within the plan's one transaction, and room for the lanes of capped arrays.
#include <unordered_set>

#include <fmt/format.h>

#include "daemon/queue.h"
#include "model/spec_json.h"
#include "sched/bits.h"

namespace gpuq::daemon {

Result<std::optional<Queue::QueuedArray>> Queue::queued_array(const std::string& name,
                                                              const std::string& sweep_json,
                                                              const JobSpec& base,
                                                              const JobSpec& first) {
  auto existing = store_.find_array_by_name(name);
  if (!existing) return tl::unexpected(existing.error());
  if (!*existing) return std::optional<QueuedArray>();
  QueuedArray queued{std::move(**existing), {}, false};
  auto ids = store_.array_elements(queued.array.id);
  if (!ids) return tl::unexpected(ids.error());
  queued.element_ids = std::move(*ids);
  if (queued.array.sweep == sweep_json) {
    auto same = same_array_work(queued.array, queued.element_ids, base, first);
    if (!same) return tl::unexpected(same.error());
    queued.same = *same;
  }
  return std::optional<QueuedArray>(std::move(queued));
}

Status Queue::find_plan_array(const std::string& name, const PlanSweep& sweep, PlanArrayJob& job,
                              std::vector<std::string>& conflicts) {
  auto existing = queued_array(name, sweep.sweep_json, job.base, job.elements.front());
  if (!existing) return tl::unexpected(existing.error());
  if (*existing) {
    if (!(*existing)->same) {
      conflicts.push_back(
          fmt::format("{} (array {} has another sweep or spec; a plan does not "
                      "replace an array: give this one another id)",
                      name, (*existing)->array.id));
      return ok();
    }
    job.array = std::move((*existing)->array);
    job.element_ids = std::move((*existing)->element_ids);
    job.existing = true;
    return ok();
  }
  auto named = store_.find_job_by_name(name, false);
  if (!named) return tl::unexpected(named.error());
  if (*named) {
    conflicts.push_back(fmt::format("{} (job {} has that name; an array needs a name no job has)",
                                    name, (*named)->id));
    return ok();
  }
  // Every name an element would take, in one read of the names that start with "NAME[".
  auto taken = store_.jobs_named_with_prefix(name + "[");
  if (!taken) return tl::unexpected(taken.error());
  if (taken->empty()) return ok();
  std::unordered_set<std::string_view> wanted;
  for (const JobSpec& element : job.elements) wanted.insert(element.name);
  for (const auto& [id, taken_name] : *taken) {
    if (!wanted.count(taken_name)) continue;
    conflicts.push_back(fmt::format("{} (job {} is named as its element {})", name, id, taken_name));
    return ok();
  }
  return ok();
}

Status Queue::insert_plan_array(const std::string& name, const PlanSweep& sweep, PlanArrayJob& job,
                                std::vector<Job>& inserted) {
  job.array = JobArray{0,
                       name,
                       sweep.sweep_json,
                       sweep.sweep.max_running,
                       static_cast<int>(sweep.sweep.size()),
                       world_.now_ms(),
                       spec_to_json(job.base).dump()};
  auto id = store_.insert_array(job.array);
  if (!id) return tl::unexpected(id.error());
  job.array.id = *id;
  job.element_ids.clear();
  for (const JobSpec& spec : job.elements) {
    Job element;
    element.spec = spec;
    // Its row keeps only its own variables: the shared environment is the array's (its base),
    // put back under them whenever the element is read.
    for (const auto& [key, value] : job.base.env) {
      if (auto it = element.spec.env.find(key); it != element.spec.env.end() && it->second == value) {
        element.spec.env.erase(it);
      }
    }
    element.array_id = job.array.id;
    element.state = spec.hold ? JobState::kHeld : JobState::kPending;
    element.submitted_at_ms = job.array.submitted_at_ms;
    next_order_ += kOrderStep;
    element.queue_order = next_order_;
    auto element_id = store_.insert_job(element);
    if (!element_id) return tl::unexpected(element_id.error());
    element.id = *element_id;
    job.element_ids.push_back(element.id);
    inserted.push_back(std::move(element));
  }
  return ok();
}

Status Queue::check_array_lanes(size_t capped) const {
  if (capped == 0) return ok();
  // As array_lane() takes them once the elements are tracked: free lanes whose units are all
  // back, then new ones up to what the scheduler can count.
  size_t room = 0;
  for (size_t k = 0; k < array_lanes_.size(); ++k) {
    room += array_lanes_[k].array_id == 0 && lane_used_[config_.lanes.size() + k] == 0;
  }
  size_t lanes = config_.lanes.size() + array_lanes_.size();
  room += lanes < static_cast<size_t>(sched::kMaxLanes) ? sched::kMaxLanes - lanes : 0;
  if (capped <= room) return ok();
  return fail(Code::kUnavailable,
              fmt::format("the plan has {} arrays with a cap (max_running), and the scheduler can "
                          "count lanes for {} more beside config.toml's lanes and the {} capped "
                          "arrays that are unfinished; submit some without a cap, or later",
                          capped, room, array_lanes_.size()));
}

}  // namespace gpuq::daemon
