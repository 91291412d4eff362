// The Queue's plan submission: all jobs of a plan, their reservations and their dependencies on
// each other, checked first and then written in one transaction — nothing is half-submitted.
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <malloc.h>
#include <set>

#include "base/time.h"
#include "daemon/queue.h"
#include "model/spec_json.h"
#include "spec/dependency_graph.h"

namespace gpuq::daemon {
namespace {

// Names a dependency cycle among the plan's jobs ("a -> b -> a"), or "" when there is none.
// The same iterative search as `gpuq lint` (spec/dependency_graph.h): a plan sent over the API
// with a chain of 100,000 links must not overflow the actor's stack.
std::string find_cycle(const std::vector<JobSpec>& jobs) {
  std::vector<std::string> nodes;
  std::map<std::string, std::vector<std::string>> edges;
  for (const auto& j : jobs) {
    nodes.push_back(j.name);
    for (const auto& d : j.deps) {
      if (d.kind == Dependency::Kind::kAfterOk || d.kind == Dependency::Kind::kAfterAny ||
          d.kind == Dependency::Kind::kAfterNotOk) {
        edges[j.name].push_back(d.target);
      }
    }
  }
  auto cycles = spec::find_cycles(nodes, edges);
  if (cycles.empty()) return "";
  std::string text;
  for (const auto& node : cycles.front()) text += (text.empty() ? "" : " -> ") + node;
  return text;
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
  if (std::string cycle = find_cycle(plan.jobs); !cycle.empty()) {
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
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    JobSpec& spec = plan.jobs[i];
    if (auto st = check_and_resolve(spec, &plan_ids); !st) {
      reservations_ = saved_reservations;
      return tl::unexpected(st.error());
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
  for (size_t index : to_insert) changed.insert(plan.jobs[index].name);
  for (bool grew = true; grew;) {
    grew = false;
    for (auto it = unchanged.begin(); it != unchanged.end();) {
      const JobSpec& spec = plan.jobs[it->first];
      bool touches = std::any_of(spec.deps.begin(), spec.deps.end(), [&](const Dependency& d) {
        return d.kind != Dependency::Kind::kFile && d.kind != Dependency::Kind::kRequires &&
               changed.count(d.target);
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
    outcome.jobs.push_back({plan.jobs[index].name, old.id, "existing"});
    plan_ids[plan.jobs[index].name] = old.id;
  }
  if (!conflicts.empty()) {
    reservations_ = saved_reservations;
    std::string list;
    for (const auto& c : conflicts) list += (list.empty() ? "" : ", ") + c;
    return fail(Code::kConflict,
                fmt::format("{} job{} of the plan already exist{} with a different spec: {}; "
                            "submit with --replace to replace waiting ones",
                            conflicts.size(), conflicts.size() == 1 ? "" : "s",
                            conflicts.size() == 1 ? "s" : "", list));
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
      if (auto st = add_event("job.submitted", job.id, std::nullopt, data); !st) return st;
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
    outcome.jobs.push_back({job.spec.name, job.id, replaced.count(job.spec.name) ? "replaced" : "created"});
  }
  request_pass();
  // A big plan leaves megabytes of freed request JSON in malloc's arenas: give them back.
  if (plan.jobs.size() > 1000) ::malloc_trim(0);
  return outcome;
}

}  // namespace gpuq::daemon
