// SPDX-License-Identifier: Apache-2.0
// Starting runs: the run directory made and the shim launched but held, every start of a pass
// on record in one commit, and only then each shim released, so no job runs unrecorded. A start
// that fails for want of the machine leaves the job pending and tries again with backoff.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <random>

#include "base/random.h"
#include "daemon/run_lifecycle.h"
#include "runner/container_run_spec.h"
#include "runner/run_env.h"

namespace gpuq::daemon {
namespace {

std::string new_run_id(int64_t job_id, int run_number) {
  static std::mt19937_64 rng{random_seed()};
  return fmt::format("{}-{}-{:016x}", job_id, run_number, rng());
}

// A start that failed is tried again after 1 s, doubling, at most 5 min.
int64_t start_retry_delay_ms(int failures) {
  return std::min<int64_t>(int64_t{1000} << std::min(failures - 1, 10), 300'000);
}

// How many taken run directories a start skips before it gives up (a directory is never
// reused, so an aborted start costs its number).
constexpr int kMaxRunDirTries = 100;

}  // namespace

std::vector<int> slots_of(const gpu::Inventory& inventory, const Run& run) {
  std::vector<int> slots;
  for (const auto& name : run.gpus) {
    for (size_t slot = 0; slot < inventory.resources.size(); ++slot) {
      if (inventory.resources[slot].name == name) slots.push_back(static_cast<int>(slot));
    }
  }
  return slots;
}

void RunLifecycle::start(const std::vector<sched::Start>& starts) {
  std::vector<PreparedStart> prepared;
  for (const auto& start : starts) {
    if (auto p = prepare_start(start.job_id, start.slots)) prepared.push_back(std::move(*p));
  }
  if (prepared.empty()) return;
  // One transaction, one fsync, for all the pass's starts; no shim is released before it.
  auto committed = host_.commit([&]() -> Status {
    for (auto& p : prepared) {
      if (auto st = record_start(p); !st) return st;
    }
    return ok();
  });
  if (committed) {
    for (auto& p : prepared) begin_run(std::move(p));
    return;
  }
  // One start's write may have failed alone: each is tried alone, so it cannot hold the
  // others back. (A store that fails fails them all; the retry timer passes again.)
  for (auto& p : prepared) {
    if (prepared.size() > 1 && host_.commit([&] { return record_start(p); })) {
      begin_run(std::move(p));
      continue;
    }
    // Not on record: the shim is dropped unreleased and exits without running anything.
    // The job stays pending.
    host_.free_slots(p.job_id, p.slots, p.lanes);
  }
}

std::optional<RunLifecycle::PreparedStart> RunLifecycle::prepare_start(int64_t job_id,
                                                                       const std::vector<int>& slots) {
  if (!host_.active_job(job_id)) return std::nullopt;
  auto prepared = prepare(job_id, slots);
  if (!prepared) {
    start_failed(job_id, slots, prepared.error().message);
    return std::nullopt;
  }
  return std::move(*prepared);
}

Result<RunLifecycle::PreparedStart> RunLifecycle::prepare(int64_t job_id, const std::vector<int>& slots) {
  const ActiveJob* active = host_.active_job(job_id);
  if (!active) return fail(Code::kNotFound, fmt::format("job {} is not tracked", job_id));
  PreparedStart p;
  p.job_id = job_id;
  p.slots = slots;
  p.lanes = active->lanes;
  host_.hold_slots(job_id, slots, p.lanes);  // first: start_failed() frees exactly what was held
  auto job = host_.load_job(job_id, false);
  if (!job) return tl::unexpected(job.error());
  p.job = std::move(*job);
  auto last = store_.last_begun_run(job_id);
  auto last_number = store_.last_run_number(job_id);
  if (!last) return tl::unexpected(last.error());
  if (!last_number) return tl::unexpected(last_number.error());
  p.last = std::move(*last);
  // A job that yielded its GPUs resumes from its checkpoint.
  p.resume = p.last && p.last->outcome == RunOutcome::kPreempted &&
             p.job.spec.preempt == PreemptMode::kYield;

  Run& run = p.run;
  run.job_id = job_id;
  runner::RunContext context;
  context.job_id = job_id;
  context.job_dir = places_.layout.job_dir(job_id);
  context.resume = p.resume;
  context.array_id = p.job.array_id;
  for (int slot : slots) {
    const Resource& r = inventory_.resources[slot];
    context.held.push_back(&r);
    run.gpus.push_back(r.name);
    if (r.index) run.gpu_indices.push_back(*r.index);
  }
  runner::RunSpec spec;
  spec.argv = runner::run_argv(p.job.spec, context.job_dir);
  spec.cwd = p.job.spec.cwd;
  spec.kill_grace_ms = config_.kill_grace_ms;
  spec.umask = places_.job_umask;
  spec.max_log_bytes = config_.max_log_bytes;
  spec.claim_deadline_file = p.job.spec.claim_deadline_file;
  // A root daemon runs the job as its submitter; a submitter the machine no longer has makes the
  // run fail (the shim says why), never run as root.
  if (auto who = world_.submitter_identity(p.job.spec.user)) {
    spec.run_as = std::move(*who);
  } else {
    spec.run_as_error = who.error().message;
  }
  if (!p.job.spec.steps.empty()) {
    // Steps that earlier runs finished are not run again (docs/jobs.md, "Steps").
    run.first_step = first_step_of(p.job, p.last);
    p.step_names = step_names_of(p.job.spec);
    spec.steps = runner::run_steps(p.job.spec, context.job_dir);
    spec.first_step = run.first_step;
  }
  // The next number whose directory is free: one left by a start that was never recorded
  // (its commit failed) keeps its files, and its number is not used again.
  int number = *last_number + 1;
  bool containers = runner::runs_in_containers(p.job.spec);
  Status created = fail(Code::kConflict, "");
  for (int tries = 0; tries < kMaxRunDirTries && !created && created.error().code == Code::kConflict;
       ++tries, ++number) {
    run.number = number;
    run.run_dir = places_.layout.run_dir(job_id, number);
    context.run_number = number;
    context.run_dir = run.run_dir;
    context.run_id = new_run_id(job_id, number);
    spec.env = runner::build_run_env(p.job.spec, context);
    if (!containers) {
      created = world_.create_run_dir(run.run_dir, spec);
      continue;
    }
    auto runtime = create_container_run_dir(p.job, context, spec);
    if (runtime) {
      p.containers = std::move(*runtime);
      created = ok();
    } else {
      created = tl::unexpected(runtime.error());
    }
  }
  if (!created) return tl::unexpected(created.error());
  run.run_id = context.run_id;
  auto shim = world_.launch_shim(run.run_dir, run.run_id, spec.run_as ? spec.run_as->login : "");
  if (!shim) return tl::unexpected(shim.error());
  p.shim = std::move(*shim);
  run.shim_pid = p.shim->pid();
  run.shim_start_ticks = p.shim->start_ticks();
  run.boot_id = places_.boot_id;
  run.started_at_ms = world_.now_ms();
  return p;
}

Status RunLifecycle::record_start(PreparedStart& p) {
  Run& run = p.run;
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t i = 0; i < run.gpus.size(); ++i) {
    if (run.gpu_indices.size() == run.gpus.size()) {
      gpus.push_back(run.gpu_indices[i]);
    } else {
      gpus.push_back(run.gpus[i]);
    }
  }
  auto id = store_.insert_run(run, p.job.spec.name);
  if (!id) return tl::unexpected(id.error());
  run.id = *id;
  if (auto st = host_.set_state(p.job_id, JobState::kPending, JobState::kRunning, ""); !st) return st;
  if (p.job.steps_from_start) {
    if (auto st = store_.set_steps_from_start(p.job_id, false); !st) return st;
  }
  nlohmann::json started = {{"gpus", gpus}, {"pid", run.shim_pid}};
  if (!p.step_names.empty()) started["first_step"] = run.first_step;
  if (auto st = host_.add_event("job.started", p.job_id, run.number, started); !st) return st;
  if (!p.resume) return ok();
  return host_.add_event("job.resumed", p.job_id, run.number,
                         {{"after_run", p.last->number}, {"preempted_by", p.last->preempted_by}});
}

void RunLifecycle::drop_uncommitted(PreparedStart p) {
  // The shim is destroyed unreleased: it exits without running anything.
  host_.free_slots(p.job_id, p.slots, p.lanes);
}

void RunLifecycle::begin_run(PreparedStart p) {
  int64_t job_id = p.job_id;
  ActiveJob& active = *host_.active_job(job_id);
  active.state = JobState::kRunning;
  if (active.rare.present()) {  // a start that failed before: the backoff starts afresh
    RareJobFields& rare = active.rare.edit();
    rare.start_failures = 0;
    rare.start_retry_at_ms = 0;
  }
  host_.note_start_error(job_id, std::nullopt);
  // Only now, with the run on record, may the job's code run. A shim that died before this
  // is collected like any other exit.
  (void)p.shim->release();
  LiveRun live;
  live.run = std::move(p.run);
  live.slots = std::move(p.slots);
  live.lanes = std::move(p.lanes);
  live.shim = std::move(p.shim);
  live.step_names = std::move(p.step_names);
  live.containers = std::move(p.containers);
  running_[job_id] = std::move(live);
  watch_exit(job_id);
  watch_steps(job_id);
  arm_timeout(job_id);
  count_start(p.job, running_.at(job_id).run);  // after the release: not on the start's path
}

void RunLifecycle::count_start(const Job& job, const Run& run) {
  // Queue wait: since the job last entered the queue (its submit, or a retry, a preemption or
  // a requeue after a lost run; see Store::requeued_at), so a retry's delay counts as waiting
  // but the time a finished job sat before `gpuq retry` does not.
  auto requeued = store_.requeued_at(job.id);
  int64_t queued_ms = std::max(job.submitted_at_ms, requeued ? *requeued : 0);
  double wait_s = static_cast<double>(run.started_at_ms - queued_ms) / 1000.0;
  std::optional<double> first;
  if (run.number == 1) first = static_cast<double>(run.started_at_ms - job.submitted_at_ms) / 1000.0;
  host_.metrics().run_started(wait_s, first);
}

void RunLifecycle::start_failed(int64_t job_id, const std::vector<int>& slots, const std::string& why) {
  ActiveJob* job = host_.active_job(job_id);
  if (!job) return;
  host_.free_slots(job_id, slots, job->lanes);
  // The machine could not start it (a full disk, no processes left, the store unreadable):
  // that is not the job's failure. It stays pending and is tried again, with backoff.
  RareJobFields& rare = job->rare.edit();
  ++rare.start_failures;
  int64_t delay = start_retry_delay_ms(rare.start_failures);
  rare.start_retry_at_ms = world_.now_ms() + delay;
  host_.note_start_error(job_id, why);
  std::fprintf(stderr, "gpuq daemon: job %lld could not start: %s; trying again in %lld ms\n",
               static_cast<long long>(job_id), why.c_str(), static_cast<long long>(delay));
  int attempt = rare.start_failures;
  (void)host_.commit([&] {
    return host_.add_event("job.start_failed", job_id, std::nullopt,
                           {{"error", why}, {"attempt", attempt}, {"retry_in_ms", delay}});
  });
  host_.request_pass();
}

}  // namespace gpuq::daemon
