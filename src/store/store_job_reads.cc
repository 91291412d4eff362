// SPDX-License-Identifier: Apache-2.0
// The store's reads of jobs and their runs (store.h): by query, id or name, every unfinished
// job streamed for the daemon's recovery, and the runs of a job.
#include <fmt/format.h>

#include <unordered_map>

#include "store/rows.h"
#include "store/store.h"

namespace gpuq::store {

Result<std::vector<Job>> Store::query_jobs(const std::string& where,
                                           const std::function<void(Statement&)>& bind,
                                           bool with_runs, bool with_env) {
  auto stmt = db_->prepare(fmt::format("SELECT {} FROM jobs {} ORDER BY id", job_columns(with_env), where));
  if (!stmt) return tl::unexpected(stmt.error());
  bind(*stmt);
  auto jobs = collect<Job>(*stmt, with_env ? job_from_row : job_from_row_without_env);
  if (!jobs || !with_runs || jobs->empty()) return jobs;
  // The runs of exactly these jobs, in one query through runs_by_job: neither one query per
  // job nor a pass over every run ever recorded.
  auto runs_stmt = db_->prepare(fmt::format(
      "SELECT {} FROM runs WHERE job_id IN (SELECT id FROM jobs {}) ORDER BY job_id, number",
      kRunColumns, where));
  if (!runs_stmt) return tl::unexpected(runs_stmt.error());
  bind(*runs_stmt);
  auto runs = collect<Run>(*runs_stmt, run_from_row);
  if (!runs) return tl::unexpected(runs.error());
  std::unordered_map<int64_t, Job*> by_id;
  for (Job& job : *jobs) by_id[job.id] = &job;
  for (Run& run : *runs) {
    if (auto it = by_id.find(run.job_id); it != by_id.end()) it->second->runs.push_back(std::move(run));
  }
  return jobs;
}

Result<std::optional<Job>> Store::find_job(int64_t id, bool with_runs) {
  auto jobs = query_jobs("WHERE id = ?", [&](Statement& s) { s.bind(1, id); }, with_runs);
  if (!jobs) return tl::unexpected(jobs.error());
  if (jobs->empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(jobs->front()));
}

Result<std::optional<Job>> Store::find_job_by_name(const std::string& name, bool with_runs) {
  auto jobs = query_jobs("WHERE name = ?", [&](Statement& s) { s.bind(1, name); }, with_runs);
  if (!jobs) return tl::unexpected(jobs.error());
  if (jobs->empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(jobs->front()));
}

Result<std::vector<Job>> Store::list_jobs(bool active_only, bool with_runs) {
  std::string where =
      active_only ? "WHERE state IN ('pending','held','running','blocked')" : std::string();
  return query_jobs(where, [](Statement&) {}, with_runs);
}

Status Store::each_active_job(const std::function<Status(const Job&)>& visit) {
  // Both reads walk jobs_active, (state, id), in its own order: ORDER BY id made SQLite sort
  // every unfinished row, specs and all, in a temporary B-tree before the first came back (a
  // million of them spilled to disk). Nothing of an unfinished job's recovery reads its
  // environment.
  const std::string where = "WHERE state IN ('pending','held','running','blocked')";
  auto jobs = db_->prepare(
      fmt::format("SELECT {} FROM jobs {} ORDER BY state, id", job_columns(false), where));
  if (!jobs) return tl::unexpected(jobs.error());
  // Their runs, in the same order, each with its job's state (the order's first key): both
  // statements step together.
  auto runs = db_->prepare(fmt::format(
      "SELECT {}, active_state FROM runs JOIN (SELECT id AS active_id, state AS active_state "
      "FROM jobs {}) ON runs.job_id = active_id ORDER BY active_state, active_id, number",
      kRunColumns, where));
  if (!runs) return tl::unexpected(runs.error());
  const int run_state_column = runs->column_count() - 1;
  std::optional<Run> next_run;
  std::string next_run_state;
  auto step_run = [&]() -> Status {
    next_run.reset();
    auto row = runs->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return ok();
    auto run = run_from_row(*runs);
    if (!run) return tl::unexpected(run.error());
    next_run = std::move(*run);
    next_run_state = runs->text(run_state_column);
    return ok();
  };
  if (auto st = step_run(); !st) return st;
  while (true) {
    auto row = jobs->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) return ok();
    auto job = job_from_row_without_env(*jobs);
    if (!job) return tl::unexpected(job.error());
    // The state as stored (to_string writes it so), the order's first key.
    const std::string state(to_string(job->state));
    auto before_or_this = [&] {
      int by_state = next_run_state.compare(state);
      return by_state < 0 || (by_state == 0 && next_run->job_id <= job->id);
    };
    while (next_run && before_or_this()) {
      if (next_run->job_id == job->id) job->runs.push_back(std::move(*next_run));
      if (auto st = step_run(); !st) return st;
    }
    if (auto st = visit(*job); !st) return st;
  }
}

Result<std::vector<QueuedJob>> Store::queued_jobs() {
  auto stmt = db_->prepare(
      "SELECT id, priority, queue_order, gpus FROM jobs WHERE state = 'pending' ORDER BY id");
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<QueuedJob>(*stmt, [](const Statement& row) -> Result<QueuedJob> {
    return QueuedJob{row.int64(0), static_cast<int>(row.int64(1)), row.int64(2),
                     static_cast<int>(row.int64(3))};
  });
}

Result<std::vector<Run>> Store::running_runs() {
  auto stmt = db_->prepare(
      fmt::format("SELECT {} FROM runs WHERE outcome = 'running' ORDER BY id", kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  return collect<Run>(*stmt, run_from_row);
}

Result<std::vector<Run>> Store::runs_of(int64_t job_id) {
  auto stmt = db_->prepare(
      fmt::format("SELECT {} FROM runs WHERE job_id = ? ORDER BY number", kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_id);
  return collect<Run>(*stmt, run_from_row);
}

Result<int> Store::last_run_number(int64_t job_id) {
  auto stmt = db_->prepare("SELECT COALESCE(MAX(number), 0) FROM runs WHERE job_id = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_id);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return static_cast<int>(stmt->int64(0));
}

Result<std::optional<Run>> Store::last_begun_run(int64_t job_id) {
  auto stmt = db_->prepare(fmt::format(
      "SELECT {} FROM runs WHERE job_id = ? AND outcome != 'not-started' ORDER BY number DESC LIMIT 1",
      kRunColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_id);
  auto runs = collect<Run>(*stmt, run_from_row);
  if (!runs) return tl::unexpected(runs.error());
  if (runs->empty()) return std::optional<Run>();
  return std::optional<Run>(std::move(runs->front()));
}

}  // namespace gpuq::store
