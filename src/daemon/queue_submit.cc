// SPDX-License-Identifier: Apache-2.0
// The Queue's submissions: single jobs and whole plans, checked before anything is written.
#include <charconv>
#include <fmt/format.h>
#include <set>
#include <unistd.h>

#include "base/time.h"
#include "daemon/queue.h"
#include "daemon/user_limits.h"
#include "model/image_ref.h"
#include "os/process_table.h"
#include "runner/container_run_spec.h"
#include "runner/run_env.h"
#include "spec/script.h"

namespace gpuq::daemon {
namespace {

std::string gpu_count_text(const gpu::Inventory& inventory) {
  size_t n = inventory.resources.size();
  return fmt::format("{} GPU{} ({})", n, n == 1 ? "" : "s",
                     inventory.mode == "fake" ? fmt::format("fake:{}", n) : inventory.mode);
}

}  // namespace

Status Queue::check_and_resolve(JobSpec& spec,
                                const std::unordered_map<std::string, int64_t>* plan_ids) {
  std::string where = spec.source.empty() ? "" : spec.source + ": ";
  auto bad = [&](std::string message) { return fail(Code::kInvalidArgument, where + message); };
  if (spec.gpus < 0) return bad(fmt::format("a job cannot ask for {} GPUs", spec.gpus));
  if (spec.gpus > static_cast<int>(inventory_.resources.size())) {
    return bad(fmt::format("job asks for {} GPU{}; this machine has {}", spec.gpus,
                           spec.gpus == 1 ? "" : "s", gpu_count_text(inventory_)));
  }
  // Who submitted it: the API names the unix socket's peer; otherwise (TCP, the fleet agent
  // without a submitter, tests) the daemon's own user.
  if (spec.user.empty()) {
    static const std::string daemon_user = os::user_name(::geteuid());
    spec.user = daemon_user;
  }
  if (spec.cwd.empty() || spec.cwd[0] != '/') {
    return bad(fmt::format("the working directory '{}' must be an absolute path", spec.cwd));
  }
  // Refused here, for every way in (a submit, an array, a plan, the fleet's agent), rather than
  // by each start of the job, for ever. Most jobs have no container user: no call for them.
  if (!spec.container_user.empty()) {
    if (auto st = check_container_user_on(spec.container_user, ::geteuid()); !st) {
      return bad(st.error().message);
    }
  }
  // Whether cwd exists is checked before the actor sees the request (a stat can hang on a dead
  // network mount, and the actor must never block): see api/server.h.
  if (!spec.script_text.empty() || !spec.script_name.empty()) {
    auto checked = spec::check_script_text(spec.script_name, spec.script_text);
    if (!checked) return bad(checked.error().message);
  }
  if (!spec.steps.empty()) {
    if (!spec.script_text.empty() || !spec.argv.empty()) {
      return bad("give steps, or a script or a command (`-- CMD ARGS`), not both");
    }
    for (size_t i = 0; i < spec.steps.size(); ++i) {
      const JobStep& step = spec.steps[i];
      if (step.script_text.empty() == step.argv.empty()) {
        return bad(fmt::format("step {} ({}) needs either a script or a command", i, step.name));
      }
      if (step.script_text.empty()) continue;
      auto checked = spec::check_script_text(step.script_name, step.script_text);
      if (!checked) return bad(fmt::format("step {}: {}", i, checked.error().message));
    }
  } else if (spec.script_text.empty() == spec.argv.empty()) {
    return bad("give either a script or a command (`-- CMD ARGS`), not both or neither");
  }
  for (const auto& lane : spec.lanes) {
    bool known = false;
    for (const auto& l : config_.lanes) known = known || l.name == lane;
    if (!known) {
      std::string names;
      for (const auto& l : config_.lanes) names += (names.empty() ? "" : ", ") + l.name;
      return bad(fmt::format("unknown lane '{}'; lanes in config.toml: {}", lane,
                             names.empty() ? "(none defined)" : names));
    }
  }
  if (spec.gpu_mem_mib > 0) {
    int64_t largest = 0;
    for (const auto& r : inventory_.resources) largest = std::max(largest, r.memory_total_mib);
    if (largest > 0 && spec.gpu_mem_mib > largest) {
      return bad(fmt::format("job needs {} MiB of GPU memory; the largest GPU here has {} MiB",
                             spec.gpu_mem_mib, largest));
    }
  }
  if (!spec.reservation.empty()) {
    auto it = std::find_if(reservations_.begin(), reservations_.end(),
                           [&](const sched::Reservation& r) { return r.name == spec.reservation; });
    if (it == reservations_.end()) return bad(fmt::format("unknown reservation '{}'", spec.reservation));
    if (static_cast<int>(it->slots.size()) < spec.gpus) {
      return bad(fmt::format("job asks for {} GPUs but reservation '{}' has {}", spec.gpus,
                             spec.reservation, it->slots.size()));
    }
  }
  // A dependency on an array (docs/sweeps.md) becomes one on each of its elements, by id.
  std::vector<Dependency> resolved;
  resolved.reserve(spec.deps.size());
  for (Dependency& dep : spec.deps) {
    if (!dep.on_job()) {
      resolved.push_back(std::move(dep));
      continue;
    }
    if (plan_ids) {
      if (auto it = plan_ids->find(dep.target); it != plan_ids->end()) {
        dep.job_id = it->second;  // 0 until the plan's jobs are inserted
        resolved.push_back(std::move(dep));
        continue;
      }
    }
    int64_t id = 0;
    bool numeric = !dep.target.empty() && dep.target.find_first_not_of("0123456789") == std::string::npos;
    if (numeric) {
      auto [end, error] = std::from_chars(dep.target.data(), dep.target.data() + dep.target.size(), id);
      if (error != std::errc() || !state_of(id)) {
        return bad(fmt::format("dependency on job {}, which does not exist", dep.target));
      }
    } else {
      auto found = store_.find_job_by_name(dep.target, false);
      if (!found) return tl::unexpected(found.error());
      if (!*found) {
        auto array = store_.find_array_by_name(dep.target);
        if (!array) return tl::unexpected(array.error());
        if (!*array) {
          return bad(fmt::format("dependency on job '{}', which does not exist (no job or array "
                                 "has that name)",
                                 dep.target));
        }
        auto elements = store_.array_elements((*array)->id);
        if (!elements) return tl::unexpected(elements.error());
        for (int64_t element : *elements) {
          resolved.push_back(Dependency{dep.kind, std::to_string(element), element});
        }
        continue;
      }
      id = (*found)->id;
    }
    dep.job_id = id;
    resolved.push_back(std::move(dep));
  }
  spec.deps = std::move(resolved);
  return ok();
}

std::vector<int> Queue::lanes_of(const JobSpec& spec) const {
  std::vector<int> lanes;
  for (const auto& lane : spec.lanes) {
    for (size_t i = 0; i < config_.lanes.size(); ++i) {
      if (config_.lanes[i].name == lane) lanes.push_back(static_cast<int>(i));
    }
  }
  return lanes;
}

Result<ActiveJob> Queue::make_active(int64_t id, const Job& job) {
  ActiveJob a = active_of(id, job);
  if (job.array_id != 0) {
    auto lane = array_lane(job.array_id);
    if (!lane) return tl::unexpected(lane.error());
    if (*lane) a.lanes.push_back(**lane);
  }
  return a;
}

ActiveJob Queue::active_of(int64_t id, const Job& job) {
  const JobSpec& spec = job.spec;
  ActiveJob a;
  a.id = id;
  a.state = job.state;
  a.priority = spec.priority;
  a.queue_order = job.queue_order;
  a.gpus = spec.gpus;
  a.lanes = lanes_of(spec);
  a.array_id = job.array_id;
  a.gpu_mem_mib = spec.gpu_mem_mib;
  if (spec.gpu_mem_mib == 0 && spec.gpus > 0 && !spec.name.empty()) {
    if (auto learned = learned_gpu_mem(spec.name)) {
      a.gpu_mem_mib = learned->first;
      a.gpu_mem_learned = true;
    }
  }
  a.preempt = spec.preempt;
  a.restart_within_ms = spec.restart_within_ms;
  if (spec.requires_warn_ms != -1 || spec.quiet_ms != -1 || spec.warn_after_ms != 0) {
    RareJobFields& rare = a.rare.edit();
    rare.requires_warn_ms = spec.requires_warn_ms;
    rare.quiet_ms = spec.quiet_ms;
    rare.warn_after_ms = spec.warn_after_ms;
  }
  a.share = spec.share;
  a.estimate_ms = spec.estimate_ms;
  a.timeout_ms = spec.timeout_ms;
  a.owner = users_.owner_of(spec.user);
  for (size_t i = 0; i < reservations_.size(); ++i) {
    if (reservations_[i].name == spec.reservation) a.reservation = static_cast<int>(i);
  }
  if (!spec.deps.empty()) a.rare.edit().deps = spec.deps;
  for (const auto& d : spec.deps) {
    a.has_conditions = a.has_conditions || d.kind == Dependency::Kind::kFile ||
                       d.kind == Dependency::Kind::kRequires;
  }
  a.has_conditions = a.has_conditions || !spec.done_if.empty();
  a.conditions = a.has_conditions ? ConditionState::kUnknown : ConditionState::kNone;
  a.images = runner::runs_in_containers(spec) ? ImageState::kUnchecked : ImageState::kNone;
  if (a.has_conditions) a.rare.edit().conditions_false_since_ms = job.conditions_false_since_ms;
  a.retries = spec.retries;
  a.retry_delay_ms = spec.retry_delay_ms;
  a.not_before_ms = spec.not_before_ms;
  a.retry_at_ms = job.retry_at_ms;
  for (const auto& run : job.runs) {
    if (run.number <= job.retry_base) continue;  // before a `gpuq retry`
    if (run.outcome == RunOutcome::kFailed || run.outcome == RunOutcome::kTimedOut) ++a.failed_runs;
  }
  return a;
}

Status Queue::make_job_dir(const Job& job) {
  std::string job_dir = options_.layout.job_dir(job.id);
  return world_.write_job_dir(job_dir, runner::script_snapshots(job.spec, job_dir), job.spec.user);
}

void Queue::track(ActiveJob job) {
  int64_t id = job.id;
  if (job.array_id != 0 && !active_.count(id)) {
    for (auto& lane : array_lanes_) lane.tracked += lane.array_id == job.array_id;
  }
  ready_index_.add(job);
  if (!active_.count(id)) users_.count_unfinished(job.owner, 1);
  active_.insert_or_assign(id, std::move(job));
  finished_.erase(id);
}

void Queue::untrack(int64_t job_id) {
  if (auto it = active_.find(job_id); it != active_.end() && it->second.array_id != 0) {
    untrack_array_element(it->second.array_id);
  }
  if (auto it = active_.find(job_id); it != active_.end()) users_.count_unfinished(it->second.owner, -1);
  active_.erase(job_id);
  ready_index_.remove(job_id);
  image_texts_.erase(job_id);
  pulls_to_begin_.erase(job_id);
  image_requests_.erase(job_id);
  held_reasons_.erase(job_id);
}

Result<Submitted> Queue::submit(JobSpec spec) {
  if (stopping_) return fail(Code::kUnavailable, "the daemon is shutting down; submit again later");
  if (auto st = check_and_resolve(spec, nullptr); !st) return tl::unexpected(st.error());
  if (!spec.name.empty()) {
    auto existing = store_.find_job_by_name(spec.name, true);
    if (!existing) return tl::unexpected(existing.error());
    if (*existing) {
      if (same_work((*existing)->spec, spec)) return Submitted{std::move(**existing), true};
      return fail(Code::kConflict,
                  fmt::format("a job named '{}' already exists (job {}, {}) with a different "
                              "spec; choose another name",
                              spec.name, (*existing)->id, to_string((*existing)->state)));
    }
  }
  if (auto st = check_max_queued(users_, spec.user, 1); !st) return tl::unexpected(st.error());
  Job job;
  job.spec = std::move(spec);
  job.state = job.spec.hold ? JobState::kHeld : JobState::kPending;
  job.submitted_at_ms = world_.now_ms();
  job.queue_order = next_order_ + kOrderStep;
  // A job that an idle GPU can take now starts in this transaction: its submit and its start
  // are on record with one fsync, and the run begins before the answer leaves.
  bool tracked = false;
  std::optional<sched::Start> start;
  std::optional<RunLifecycle::PreparedStart> prepared;
  std::string refused;  // why the machine refused that start (tried again by the pass)
  // What the attempt did in memory, undone when its transaction did not commit.
  auto undo = [&] {
    if (prepared) {
      runs_->drop_uncommitted(std::move(*prepared));
    } else if (start) {
      free_slots(job.id, start->slots, active_.at(job.id).lanes);  // a refused start's GPUs
    }
    prepared.reset();
    start.reset();
    refused.clear();
    if (tracked) untrack(job.id);
    tracked = false;
  };
  auto committed = commit([&]() -> Status {
    auto id = store_.insert_job(job);
    if (!id) return tl::unexpected(id.error());
    job.id = *id;
    if (auto st = make_job_dir(job); !st) return st;
    nlohmann::json data = {{"gpus", job.spec.gpus}, {"priority", job.spec.priority}};
    if (!job.spec.name.empty()) data["name"] = job.spec.name;
    if (job.spec.hold) data["held"] = true;
    if (auto st = add_event("job.submitted", job.id, std::nullopt, data); !st) return st;
    if (job.state != JobState::kPending) return ok();
    auto active = make_active(job.id, job);
    if (!active) return ok();  // tracked after the commit, as any job
    track(std::move(*active));
    tracked = true;
    start = start_at_submit(active_.at(job.id));
    if (!start) return ok();
    auto p = runs_->prepare_in_commit(job.id, start->slots);
    if (!p) {
      refused = p.error().message;
      return ok();
    }
    prepared = std::move(*p);
    return runs_->record_in_commit(*prepared);
  });
  if (!committed) {
    undo();
    return tl::unexpected(unavailable(committed.error()));
  }
  next_order_ = job.queue_order;
  if (!tracked) {
    if (auto active = make_active(job.id, job)) track(std::move(*active));
  }
  job.reason = job.spec.hold ? "held (gpuq release)" : "waiting for the scheduler";
  if (prepared) {
    int slots = static_cast<int>(prepared->slots.size());
    job.runs.push_back(prepared->run);  // the answer shows the run it began
    runs_->begin_committed(std::move(*prepared));
    users_.note_started(job.id, active_.at(job.id).owner, slots, job.runs.back().started_at_ms);
    job.state = JobState::kRunning;
    job.reason.clear();
  } else if (start) {
    runs_->start_refused(job.id, start->slots, refused);
  }
  request_pass();
  return Submitted{std::move(job), false};
}

}  // namespace gpuq::daemon
