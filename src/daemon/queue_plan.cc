// SPDX-License-Identifier: Apache-2.0
// The Queue's plan submission: all jobs of a plan, their reservations and their dependencies on
// each other, checked first and then written in one transaction — nothing is half-submitted.
// A plan's job arrays (docs/sweeps.md) are queued as arrays in that transaction; their elements
// are jobs of the plan, and a dependency on an array's name waits for every element.
#include <fmt/format.h>
#include <malloc.h>

#include <filesystem>
#include <map>
#include <set>

#include "base/time.h"
#include "daemon/queue.h"
#include "daemon/user_limits.h"
#include "model/spec_json.h"
#include "spec/dependency_graph.h"
#include "spec/sweep_specs.h"

namespace gpuq::daemon {
namespace {

// The names of each array job's elements, by the array's name.
using ArrayElements = std::unordered_map<std::string, std::vector<std::string>>;

// The plan's array jobs' element names, each added to `plan_ids` (so that "shards[3]" is a job
// of the plan); refused when an element has the name of another job of the plan.
Result<ArrayElements> plan_array_elements(const PlanRequest& plan,
                                          std::unordered_map<std::string, int64_t>& plan_ids) {
  ArrayElements arrays;
  for (size_t i = 0; i < plan.sweeps.size(); ++i) {
    if (!plan.sweeps[i]) continue;
    const JobSpec& job = plan.jobs[i];
    if (job.name.find_first_of("[]") != std::string::npos) {
      return fail(Code::kInvalidArgument,
                  fmt::format("{}: array '{}': an array's name cannot hold [ or ] (its elements "
                              "are NAME[3], NAME[lr=3e-4])",
                              job.source, job.name));
    }
    if (plan.sweeps[i]->sweep.size() == 0) {
      return fail(Code::kInvalidArgument,
                  fmt::format("{}: array '{}' has no elements", job.source, job.name));
    }
    std::vector<std::string>& names = arrays[job.name];
    for (const auto& element : spec::sweep_elements(plan.sweeps[i]->sweep)) {
      names.push_back(job.name + element.suffix());
      if (!plan_ids.emplace(names.back(), 0).second) {
        return fail(Code::kInvalidArgument,
                    fmt::format("{}: job '{}' of the plan has the name of an element of array "
                                "'{}'; rename it",
                                job.source, names.back(), job.name));
      }
    }
  }
  return arrays;
}

// A dependency on an array of the plan becomes one on each of its elements, by name.
void expand_array_dependencies(std::vector<JobSpec>& jobs, const ArrayElements& arrays) {
  if (arrays.empty()) return;
  for (JobSpec& job : jobs) {
    std::vector<Dependency> deps;
    deps.reserve(job.deps.size());
    for (Dependency& d : job.deps) {
      auto array = d.on_job() ? arrays.find(d.target) : arrays.end();
      if (array == arrays.end()) {
        deps.push_back(std::move(d));
        continue;
      }
      for (const std::string& element : array->second)
        deps.push_back(Dependency{d.kind, element, 0});
    }
    job.deps = std::move(deps);
  }
}

// Names a dependency cycle among the plan's jobs ("a -> b -> a"), or "" when there is none; an
// array's elements count as the array. The same iterative search as `gpuq lint`
// (spec/dependency_graph.h): a plan sent over the API with a chain of 100,000 links must not
// overflow the actor's stack.
std::string find_cycle(const std::vector<JobSpec>& jobs, const ArrayElements& arrays) {
  std::unordered_map<std::string, std::string> array_of;
  for (const auto& [array, elements] : arrays) {
    for (const auto& element : elements) array_of.emplace(element, array);
  }
  std::vector<std::string> nodes;
  std::map<std::string, std::vector<std::string>> edges;
  for (const auto& j : jobs) {
    nodes.push_back(j.name);
    for (const auto& d : j.deps) {
      if (!d.on_job()) continue;
      auto array = array_of.find(d.target);
      edges[j.name].push_back(array == array_of.end() ? d.target : array->second);
    }
  }
  auto cycles = spec::find_cycles(nodes, edges);
  if (cycles.empty()) return "";
  std::string text;
  for (const auto& node : cycles.front()) text += (text.empty() ? "" : " -> ") + node;
  return text;
}

// The data of an array's `array.submitted` event, as submit_sweep writes it.
nlohmann::json array_submitted_data(const JobArray& array) {
  nlohmann::json data = {{"array", array.id}, {"name", array.name}, {"size", array.size}};
  if (array.max_running > 0) data["max_running"] = array.max_running;
  return data;
}

// The plan's answer for an array job: the array, and its elements' ids and names.
PlanOutcome::Entry array_entry(const JobArray& array, const std::vector<int64_t>& element_ids,
                               const std::vector<JobSpec>& elements, const std::string& result) {
  PlanOutcome::Entry entry{array.name, array.id, result, array, element_ids, {}};
  entry.element_names.reserve(elements.size());
  for (const JobSpec& element : elements) entry.element_names.push_back(element.name);
  return entry;
}

}  // namespace

Result<PlanOutcome> Queue::submit_plan(PlanRequest plan) {
  if (stopping_) return fail(Code::kUnavailable, "the daemon is shutting down; submit again later");
  std::unordered_map<std::string, int64_t> plan_ids;
  for (const auto& job : plan.jobs) {
    if (job.name.empty()) return fail(Code::kInvalidArgument, job.source + ": a plan job needs a name");
    if (!plan_ids.emplace(job.name, 0).second) {
      return fail(Code::kInvalidArgument, fmt::format("{}: job '{}' appears twice in the plan", job.source, job.name));
    }
  }
  plan.sweeps.resize(plan.jobs.size());
  auto arrays = plan_array_elements(plan, plan_ids);
  if (!arrays) return tl::unexpected(arrays.error());
  expand_array_dependencies(plan.jobs, *arrays);
  if (std::string cycle = find_cycle(plan.jobs, *arrays); !cycle.empty()) {
    return fail(Code::kInvalidArgument, "the plan's dependencies form a cycle: " + cycle);
  }
  // Reservations: GPU indices must exist; a job may belong to one.
  std::map<std::string, std::vector<int>> reservation_slots;
  for (const auto& r : plan.reservations) {
    std::vector<int> slots;
    for (int index : r.gpus) {
      int found = -1;
      for (size_t s = 0; s < inventory_.resources.size(); ++s) {
        if (inventory_.resources[s].index == index) found = static_cast<int>(s);
      }
      if (found < 0) return fail(Code::kInvalidArgument, fmt::format("reservation '{}' names GPU {}, which this machine does not have", r.name, index));
      slots.push_back(found);
    }
    reservation_slots[r.name] = slots;
    for (const auto& name : r.jobs) {
      if (!plan_ids.count(name)) {
        return fail(Code::kInvalidArgument, fmt::format("reservation '{}' names job '{}', which is not in the plan", r.name, name));
      }
      for (auto& job : plan.jobs) {
        if (job.name == name) job.reservation = r.name;
      }
    }
  }
  // Make the plan's reservations known before checking jobs against them.
  auto saved_reservations = reservations_;
  for (const auto& [name, slots] : reservation_slots) {
    auto it = std::find_if(reservations_.begin(), reservations_.end(),
                           [&name = name](const auto& r) { return r.name == name; });
    if (it == reservations_.end()) {
      reservations_.push_back({name, slots});
    } else {
      it->slots = slots;
    }
  }
  PlanOutcome outcome;
  std::vector<size_t> to_insert;
  std::vector<std::pair<size_t, Job>> to_replace;
  std::vector<std::pair<size_t, Job>> unchanged;
  std::vector<std::string> conflicts;
  std::map<size_t, PlanArrayJob> array_jobs;  // by index in plan.jobs
  std::vector<size_t> unchanged_arrays;
  size_t capped_arrays = 0;
  size_t array_conflicts = 0;  // of `conflicts`: --replace does not help with these
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    JobSpec& spec = plan.jobs[i];
    if (auto st = check_and_resolve(spec, &plan_ids); !st) {
      reservations_ = saved_reservations;
      return tl::unexpected(st.error());
    }
    if (plan.sweeps[i]) {
      // The elements differ only in name, arguments and variables: checked once, as their base.
      PlanArrayJob& array = array_jobs[i];
      array.base = spec;
      array.elements = spec::element_specs(spec, spec.name, plan.sweeps[i]->sweep);
      size_t conflicts_before = conflicts.size();
      if (auto st = find_plan_array(spec.name, *plan.sweeps[i], array, conflicts); !st) {
        reservations_ = saved_reservations;
        return tl::unexpected(st.error());
      }
      array_conflicts += conflicts.size() - conflicts_before;
      if (array.existing) {
        unchanged_arrays.push_back(i);
      } else {
        to_insert.push_back(i);
        capped_arrays += plan.sweeps[i]->sweep.max_running > 0;
      }
      continue;
    }
    auto existing = store_.find_job_by_name(spec.name, false);
    if (!existing) {
      reservations_ = saved_reservations;
      return tl::unexpected(existing.error());
    }
    if (!*existing) {
      to_insert.push_back(i);
      continue;
    }
    Job& old = **existing;
    if (same_work(old.spec, spec)) {
      unchanged.emplace_back(i, std::move(old));
      continue;
    }
    if (!plan.replace) {
      conflicts.push_back(fmt::format("{} (job {}, {})", spec.name, old.id, to_string(old.state)));
    } else if (old.state == JobState::kRunning) {
      conflicts.push_back(fmt::format("{} (job {} is running and cannot be replaced)", spec.name, old.id));
    } else {
      to_replace.emplace_back(i, std::move(old));
      to_insert.push_back(i);
    }
  }
  // A job whose own spec is unchanged still changes when a job it depends on is new or
  // replaced: it must wait for the new one, not the old (and cancelled) one.
  std::set<std::string> changed;
  for (size_t index : to_insert) {
    changed.insert(plan.jobs[index].name);
    if (auto array = array_jobs.find(index); array != array_jobs.end()) {
      for (const JobSpec& element : array->second.elements) changed.insert(element.name);
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (auto it = unchanged.begin(); it != unchanged.end();) {
      const JobSpec& spec = plan.jobs[it->first];
      bool touches = std::any_of(spec.deps.begin(), spec.deps.end(), [&](const Dependency& d) {
        return d.on_job() && changed.count(d.target);
      });
      if (!touches) {
        ++it;
        continue;
      }
      Job& old = it->second;
      if (!plan.replace) {
        conflicts.push_back(fmt::format("{} (job {}: a job it depends on changes)", spec.name, old.id));
      } else if (old.state == JobState::kRunning) {
        conflicts.push_back(fmt::format("{} (job {} is running and cannot be replaced)", spec.name, old.id));
      } else {
        to_replace.emplace_back(it->first, std::move(old));
        to_insert.push_back(it->first);
      }
      changed.insert(spec.name);
      it = unchanged.erase(it);
      grew = true;
    }
  }
  std::sort(to_insert.begin(), to_insert.end());  // queue order follows the plan's order
  for (auto& [index, old] : unchanged) {
    outcome.jobs.push_back({plan.jobs[index].name, old.id, "existing", {}, {}, {}});
    plan_ids[plan.jobs[index].name] = old.id;
  }
  // An array queued already stays as it is; one whose dependencies change is a conflict.
  for (size_t index : unchanged_arrays) {
    const JobSpec& base = plan.jobs[index];
    PlanArrayJob& array = array_jobs[index];
    bool touches = std::any_of(base.deps.begin(), base.deps.end(), [&](const Dependency& d) {
      return d.on_job() && changed.count(d.target);
    });
    if (touches) {
      conflicts.push_back(
          fmt::format("{} (array {}: a job it depends on changes; a plan does not "
                      "replace an array)",
                      base.name, array.array.id));
      ++array_conflicts;
    }
    for (size_t k = 0; k < array.element_ids.size(); ++k) {
      plan_ids[array.elements[k].name] = array.element_ids[k];
    }
    outcome.jobs.push_back(array_entry(array.array, array.element_ids, array.elements, "existing"));
  }
  if (!conflicts.empty()) {
    reservations_ = saved_reservations;
    std::string list;
    for (const auto& c : conflicts) list += (list.empty() ? "" : ", ") + c;
    return fail(Code::kConflict,
                fmt::format("{} job{} of the plan already exist{} with a different spec: {}; {}",
                            conflicts.size(), conflicts.size() == 1 ? "" : "s",
                            conflicts.size() == 1 ? "s" : "", list,
                            array_conflicts == conflicts.size()
                                ? "give a changed array another id"
                                : "submit with --replace to replace waiting ones"));
  }
  if (auto st = check_array_lanes(capped_arrays); !st) {
    reservations_ = saved_reservations;
    return tl::unexpected(st.error());
  }
  int64_t adding = static_cast<int64_t>(to_insert.size() - to_replace.size());
  for (size_t index : to_insert) {
    if (auto array = array_jobs.find(index); array != array_jobs.end()) {
      adding += static_cast<int64_t>(array->second.elements.size()) - 1;
    }
  }
  if (auto st = check_max_queued(users_, plan.jobs.empty() ? "" : plan.jobs.front().user, adding);
      !st) {
    reservations_ = saved_reservations;
    return tl::unexpected(st.error());
  }
  std::vector<Job> inserted;
  int64_t order_before = next_order_;
  auto committed = commit([&]() -> Status {
    for (const auto& [name, slots] : reservation_slots) {
      if (auto st = store_.upsert_reservation(name, slots); !st) return st;
    }
    for (auto& [index, old] : to_replace) {
      if (auto st = store_.clear_name(old.id); !st) return st;
      if (!is_terminal(old.state)) {
        if (auto st = set_state(old.id, old.state, JobState::kCancelled, "replaced by a new plan"); !st) return st;
        if (auto st = add_event("job.cancelled", old.id, std::nullopt, {{"replaced", true}}); !st) return st;
      }
    }
    for (size_t index : to_insert) {
      if (auto array = array_jobs.find(index); array != array_jobs.end()) {
        size_t first = inserted.size();
        auto st =
            insert_plan_array(plan.jobs[index].name, *plan.sweeps[index], array->second, inserted);
        if (!st) return st;
        for (size_t k = first; k < inserted.size(); ++k)
          plan_ids[inserted[k].spec.name] = inserted[k].id;
        continue;
      }
      Job job;
      job.spec = plan.jobs[index];
      job.state = job.spec.hold ? JobState::kHeld : JobState::kPending;
      job.submitted_at_ms = world_.now_ms();
      next_order_ += kOrderStep;
      job.queue_order = next_order_;
      auto id = store_.insert_job(job);
      if (!id) return tl::unexpected(id.error());
      job.id = *id;
      plan_ids[job.spec.name] = job.id;
      inserted.push_back(std::move(job));
    }
    // Now every plan job has an id: resolve the dependencies between them.
    for (Job& job : inserted) {
      for (Dependency& d : job.spec.deps) {
        if (auto it = plan_ids.find(d.target); it != plan_ids.end() && d.job_id == 0) d.job_id = it->second;
      }
      if (auto st = store_.set_spec(job.id, job.spec); !st) return st;
      if (auto st = make_job_dir(job); !st) return st;
      nlohmann::json data = {{"gpus", job.spec.gpus}, {"priority", job.spec.priority},
                             {"name", job.spec.name}, {"plan", true}};
      if (job.array_id != 0) data["array"] = job.array_id;
      if (job.spec.hold) data["held"] = true;
      if (auto st = add_event("job.submitted", job.id, std::nullopt, data); !st) return st;
    }
    for (size_t index : to_insert) {
      auto array = array_jobs.find(index);
      if (array == array_jobs.end()) continue;
      if (auto st = add_event("array.submitted", std::nullopt, std::nullopt,
                              array_submitted_data(array->second.array));
          !st) {
        return st;
      }
    }
    return ok();
  });
  if (!committed) {
    reservations_ = saved_reservations;
    next_order_ = order_before;
    return tl::unexpected(unavailable(committed.error()));
  }
  for (auto& [index, old] : to_replace) {
    if (!is_terminal(old.state)) note_finished(old.id, JobState::kCancelled);
  }
  std::set<std::string> replaced;
  for (auto& [index, old] : to_replace) replaced.insert(plan.jobs[index].name);
  for (Job& job : inserted) {
    auto active = make_active(job.id, job);
    if (active) track(std::move(*active));
  }
  for (size_t index : to_insert) {
    const std::string& name = plan.jobs[index].name;
    if (auto array = array_jobs.find(index); array != array_jobs.end()) {
      const PlanArrayJob& queued = array->second;
      outcome.jobs.push_back(
          array_entry(queued.array, queued.element_ids, queued.elements, "created"));
    } else {
      outcome.jobs.push_back(
          {name, plan_ids.at(name), replaced.count(name) ? "replaced" : "created", {}, {}, {}});
    }
  }
  // The answer in the plan's order, whether each job was queued now or before.
  std::unordered_map<std::string, size_t> plan_order;
  for (size_t i = 0; i < plan.jobs.size(); ++i) plan_order.emplace(plan.jobs[i].name, i);
  std::stable_sort(outcome.jobs.begin(), outcome.jobs.end(), [&](const auto& a, const auto& b) {
    return plan_order[a.name] < plan_order[b.name];
  });
  request_pass();
  // A big plan leaves megabytes of freed request JSON in malloc's arenas: give them back.
  if (plan.jobs.size() > 1000) ::malloc_trim(0);
  return outcome;
}

Status Queue::reserve_gpu(const std::string& name, int index) {
  int slot = -1;
  for (size_t s = 0; s < inventory_.resources.size(); ++s) {
    if (inventory_.resources[s].index == index) slot = static_cast<int>(s);
  }
  if (slot < 0) {
    return fail(Code::kInvalidArgument,
                fmt::format("this machine has no GPU {} (it has {})", index, inventory_.resources.size()));
  }
  auto it = std::find_if(reservations_.begin(), reservations_.end(),
                         [&](const sched::Reservation& r) { return r.name == name; });
  if (it != reservations_.end() && it->slots == std::vector<int>{slot}) return ok();
  auto committed = commit([&] { return store_.upsert_reservation(name, {slot}); });
  if (!committed) return tl::unexpected(unavailable(committed.error()));
  if (it == reservations_.end()) {
    reservations_.push_back({name, {slot}});
  } else {
    it->slots = {slot};
  }
  return ok();
}

}  // namespace gpuq::daemon
