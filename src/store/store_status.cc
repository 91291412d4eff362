// SPDX-License-Identifier: Apache-2.0
// The jobs GET /v1/status shows: every unfinished job and the latest finished ones, or a page
// of the pending ones in serving order, read through indexes (jobs_active, jobs_finished,
// jobs_pending_order) so that neither a long history nor a deep queue costs much here.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/dependency_kind.h"
#include "store/store.h"

namespace gpuq::store {
namespace {

constexpr const char* kActive = "state IN ('pending','held','running','blocked')";

// The latest finished jobs (?1 of them): the newest entries of jobs_finished (schema 7), whose
// WHERE (finished_at IS NOT NULL) this repeats, as SQLite uses a partial index only for a query
// that implies its WHERE. With `outside_arrays`, less the elements of the arrays listed in ?2 (a
// JSON list of ids); with `of_user`, only user ?9's, the newest entries of jobs_finished_user
// (schema 20): the cost follows that user's history, not everyone's.
std::string latest_finished(bool outside_arrays, bool of_user) {
  return fmt::format(
      "SELECT id FROM jobs{} WHERE finished_at IS NOT NULL AND "
      "state IN ('succeeded','failed','cancelled','skipped'){}{} "
      "ORDER BY finished_at DESC, id DESC LIMIT ?1",
      of_user ? " INDEXED BY jobs_finished_user" : "",
      outside_arrays ? " AND (array_id IS NULL OR array_id NOT IN (SELECT value FROM json_each(?2)))" : "",
      of_user ? " AND user = ?9" : "");
}

// Every job is active or finished: all jobs (which SQLite counts page by page in its smallest
// index, without decoding rows) less the active ones (an index range).
const std::string kFinishedTotal =
    fmt::format("SELECT (SELECT COUNT(*) FROM jobs) - (SELECT COUNT(*) FROM jobs WHERE {})", kActive);

// The spec's fields an ETA reads, from eta_jobs()'s columns `first`...: est_ms, timeout_ms,
// not_before_ms, deps (JSON text), lanes (JSON text), gpu_mem, share; each NULL where the spec
// leaves it out. Only deps and lanes, which most jobs leave out, are parsed.
Status read_eta_fields(const Statement& row, int first, Job& job) {
  auto number = [&](int k) { return row.is_null(first + k) ? 0 : row.int64(first + k); };
  job.spec.estimate_ms = number(0);
  job.spec.timeout_ms = number(1);
  job.spec.not_before_ms = number(2);
  job.spec.gpu_mem_mib = number(5);
  job.spec.share = number(6) != 0;
  auto list = [&](int k) {
    return row.is_null(first + k) ? nlohmann::json::array() : nlohmann::json::parse(row.text(first + k), nullptr, false);
  };
  nlohmann::json lanes = list(4);
  nlohmann::json deps = list(3);
  if (!lanes.is_array() || !deps.is_array()) return fail(Code::kCorruption, "its lanes or deps are not a JSON list");
  for (const auto& lane : lanes) {
    if (lane.is_string()) job.spec.lanes.push_back(lane.get<std::string>());
  }
  for (const auto& d : deps) {
    if (!d.is_object() || !d.contains("kind") || !d["kind"].is_string()) {
      return fail(Code::kCorruption, "a dependency of its spec has no kind");
    }
    Dependency dep;
    std::string kind = d["kind"].get<std::string>();
    auto parsed = parse_dependency_kind(kind);
    if (!parsed) return fail(Code::kCorruption, fmt::format("unknown dependency kind '{}'", kind));
    dep.kind = *parsed;
    if (d.contains("target") && d["target"].is_string()) dep.target = d["target"].get<std::string>();
    if (d.contains("job_id") && d["job_id"].is_number_integer()) dep.job_id = d["job_id"].get<int64_t>();
    job.spec.deps.push_back(std::move(dep));
  }
  return ok();
}

Result<int64_t> single_int(Database& db, const std::string& sql) {
  auto stmt = db.prepare(sql);
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return stmt->int64(0);
}

// How many finished jobs `user` has: a range of jobs_finished_user (schema 20), whose WHERE
// this repeats, each of the user's rows read for its state (as latest_finished's).
Result<int64_t> finished_count_of(Database& db, const std::string& user) {
  auto stmt = db.prepare(
      "SELECT COUNT(*) FROM jobs INDEXED BY jobs_finished_user WHERE finished_at IS NOT NULL AND "
      "state IN ('succeeded','failed','cancelled','skipped') AND user = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, user);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return stmt->int64(0);
}

}  // namespace

Result<Store::StatusJobs> Store::status_jobs(std::optional<size_t> finished_limit,
                                             const std::vector<int64_t>* left_out_arrays,
                                             const std::string* user) {
  StatusJobs out;
  // LIMIT -1 is SQLite's "no limit".
  int64_t limit = finished_limit ? static_cast<int64_t>(*finished_limit) : -1;
  // Without the arrays' elements, or of one user, the unfinished jobs are found in jobs_eta,
  // which covers array_id and user: the rows of the others are not read (a user's jobs among a
  // million queued: the index, ~60 bytes a job, not a million specs).
  const std::string active =
      left_out_arrays || user
          ? fmt::format("id IN (SELECT id FROM jobs INDEXED BY jobs_eta WHERE {}{}{})", kActive,
                        left_out_arrays ? " AND array_id IS NULL" : "", user ? " AND user = ?9" : "")
          : std::string(kActive);
  const std::string list = left_out_arrays ? fmt::format("[{}]", fmt::join(*left_out_arrays, ",")) : "";
  auto jobs = query_jobs(fmt::format("WHERE {} OR id IN ({})", active,
                                     latest_finished(left_out_arrays != nullptr, user != nullptr)),
                         [&](Statement& s) {
                           s.bind(1, limit);
                           if (left_out_arrays) s.bind(2, list);
                           if (user) s.bind(9, *user);
                         },
                         true, /*with_env=*/false);
  if (!jobs) return tl::unexpected(jobs.error());
  for (Job& job : *jobs) (is_terminal(job.state) ? out.finished : out.active).push_back(std::move(job));
  auto finished_total = single_int(*db_, kFinishedTotal);
  if (!finished_total) return tl::unexpected(finished_total.error());
  out.finished_total = *finished_total;
  return out;
}

Result<std::unordered_map<int64_t, int64_t>> Store::serving_positions(
    const std::unordered_set<int64_t>& pending, bool fifo) {
  std::unordered_map<int64_t, int64_t> positions;
  if (pending.empty()) return positions;
  // Every pending id in serving order (jobs_pending_order alone, for the priority order), read
  // up to the last of those asked for.
  auto stmt = db_->prepare(
      fifo ? "SELECT id FROM jobs WHERE state = 'pending' ORDER BY queue_order, id"
           : "SELECT id FROM jobs INDEXED BY jobs_pending_order WHERE state = 'pending' "
             "ORDER BY priority, queue_order, id");
  if (!stmt) return tl::unexpected(stmt.error());
  for (int64_t position = 1; positions.size() < pending.size(); ++position) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    if (int64_t id = stmt->int64(0); pending.count(id)) positions[id] = position;
  }
  return positions;
}

Result<std::vector<Job>> Store::eta_jobs() {
  // Only jobs_eta is read (it covers every column here), not one spec; SQLite takes each
  // jobs.eta list apart once (json_extract keeps the latest parse).
  auto count = active_count();
  if (!count) return tl::unexpected(count.error());
  auto stmt = db_->prepare(fmt::format(
      "SELECT id, name, state, priority, queue_order, gpus, retry_at, array_id, "
      "json_extract(eta, '$[0]'), json_extract(eta, '$[1]'), json_extract(eta, '$[2]'), "
      "json_extract(eta, '$[3]'), json_extract(eta, '$[4]'), json_extract(eta, '$[5]'), "
      "json_extract(eta, '$[6]'), user FROM jobs INDEXED BY jobs_eta WHERE {} ORDER BY id",
      kActive));
  if (!stmt) return tl::unexpected(stmt.error());
  std::vector<Job> jobs;
  jobs.reserve(static_cast<size_t>(*count));
  std::unordered_map<int64_t, size_t> running;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    Job job;
    job.id = stmt->int64(0);
    job.spec.name = stmt->is_null(1) ? "" : stmt->text(1);
    auto state = parse_job_state(stmt->text(2));
    if (!state) return tl::unexpected(state.error());
    job.state = *state;
    job.spec.priority = static_cast<int>(stmt->int64(3));
    job.queue_order = stmt->int64(4);
    job.spec.gpus = static_cast<int>(stmt->int64(5));
    job.retry_at_ms = stmt->int64(6);
    job.array_id = stmt->is_null(7) ? 0 : stmt->int64(7);
    if (auto st = read_eta_fields(*stmt, 8, job); !st) {
      return fail(Code::kCorruption, fmt::format("job {}: {}", job.id, st.error().message));
    }
    job.spec.user = stmt->text(15);
    if (job.state == JobState::kRunning) running[job.id] = jobs.size();
    jobs.push_back(std::move(job));
  }
  if (running.empty()) return jobs;
  auto runs = running_runs();
  if (!runs) return tl::unexpected(runs.error());
  for (Run& run : *runs) {
    if (auto it = running.find(run.job_id); it != running.end()) jobs[it->second].runs.push_back(std::move(run));
  }
  return jobs;
}

Result<std::optional<int64_t>> Store::unbounded_job() {
  // spec_to_json() writes est_ms and timeout_ms only when they are set; jobs.eta lists them
  // first. Only jobs_eta is read.
  auto stmt = db_->prepare(fmt::format(
      "SELECT id FROM jobs INDEXED BY jobs_eta WHERE {} AND state IN ('pending','running') AND "
      "json_extract(eta, '$[0]') IS NULL AND json_extract(eta, '$[1]') IS NULL LIMIT 1",
      kActive));
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  if (!*row) return std::optional<int64_t>();
  return std::optional<int64_t>(stmt->int64(0));
}

Result<int64_t> Store::active_count() {
  return single_int(*db_, fmt::format("SELECT COUNT(*) FROM jobs WHERE {}", kActive));
}

Result<Store::QueuePage> Store::queue_page(size_t offset, size_t limit, bool fifo,
                                           size_t finished_limit,
                                           const std::vector<int64_t>* left_out_arrays,
                                           std::optional<size_t> waiting_limit,
                                           const std::string* user) {
  QueuePage page;
  const std::string left_out = left_out_arrays ? fmt::format("[{}]", fmt::join(*left_out_arrays, ",")) : "";
  // One user's page: every query below keeps that user's jobs (?9), and the unfinished ones are
  // found in jobs_eta, which covers state, priority, queue order, array_id and user.
  const char* of_user = user ? " AND user = ?9" : "";
  auto bind_user = [user](Statement& s) {
    if (user) s.bind(9, *user);
  };
  if (finished_limit > 0) {
    auto finished = query_jobs(fmt::format("WHERE id IN ({})", latest_finished(left_out_arrays != nullptr, user != nullptr)),
                               [&](Statement& s) {
                                 s.bind(1, static_cast<int64_t>(finished_limit));
                                 if (left_out_arrays) s.bind(2, left_out);
                                 bind_user(s);
                               },
                               true, /*with_env=*/false);
    if (!finished) return tl::unexpected(finished.error());
    page.finished = std::move(*finished);
  }
  // An unfinished job of a collapsed array is an element of an unfinished array: every array
  // with an unfinished element is in the list (active_array_summaries), so "not an element"
  // says it without the list.
  const char* singles = left_out_arrays ? " AND array_id IS NULL" : "";
  // kActive repeats jobs_active's WHERE, which SQLite needs to use that partial index: without
  // it, this read every row of the table.
  auto others = query_jobs(fmt::format("WHERE state = 'running' AND {}{}{}", kActive, singles, of_user),
                           bind_user, true, /*with_env=*/false);
  if (!others) return tl::unexpected(others.error());
  page.others = std::move(*others);
  // A user's counts by state, in one pass over jobs_eta: a page of someone with none of a
  // million queued jobs reads no more than that.
  if (user) {
    auto stmt = db_->prepare(fmt::format(
        "SELECT state, COUNT(*) FROM jobs INDEXED BY jobs_eta WHERE {}{}{} GROUP BY state", kActive,
        singles, of_user));
    if (!stmt) return tl::unexpected(stmt.error());
    bind_user(*stmt);
    while (true) {
      auto row = stmt->step();
      if (!row) return tl::unexpected(row.error());
      if (!*row) break;
      const std::string state = stmt->text(0);
      if (state == "pending") page.pending_total = stmt->int64(1);
      if (state == "held") page.held_total = stmt->int64(1);
      if (state == "blocked") page.blocked_total = stmt->int64(1);
    }
  }
  // The held and the blocked ones, the oldest first, and how many there are. Without the
  // arrays' elements these are jobs_waiting_single's ranges; with them, jobs_active's.
  const char* waiting_index = user ? "jobs_eta" : left_out_arrays ? "jobs_waiting_single" : "jobs_active";
  for (const char* state : {"held", "blocked"}) {
    int64_t& total = std::string_view(state) == "held" ? page.held_total : page.blocked_total;
    if (user && total == 0) continue;
    const std::string where =
        left_out_arrays && !user
            ? fmt::format("state = '{}' AND state IN ('held','blocked') AND array_id IS NULL", state)
            : fmt::format("state = '{}' AND {}{}{}", state, kActive, singles, of_user);
    const int64_t most = waiting_limit ? static_cast<int64_t>(*waiting_limit) : -1;  // -1: no limit
    auto waiting = query_jobs(
        fmt::format("WHERE id IN (SELECT id FROM jobs INDEXED BY {} WHERE {} ORDER BY id LIMIT ?1)",
                    waiting_index, where),
        [&](Statement& s) {
          s.bind(1, most);
          bind_user(s);
        },
        true, /*with_env=*/false);
    if (!waiting) return tl::unexpected(waiting.error());
    if (!user) {
      total = static_cast<int64_t>(waiting->size());
      if (waiting_limit && waiting->size() == *waiting_limit) {  // a full page may have left some out
        auto counted = single_int(*db_, fmt::format("SELECT COUNT(*) FROM jobs INDEXED BY {} WHERE {}",
                                                    waiting_index, where));
        if (!counted) return tl::unexpected(counted.error());
        total = *counted;
      }
    }
    std::move(waiting->begin(), waiting->end(), std::back_inserter(page.others));
  }
  std::sort(page.others.begin(), page.others.end(), [](const Job& a, const Job& b) { return a.id < b.id; });
  // The page's ids in serving order: a range of jobs_pending_order for the priority order (for
  // one user, the first of theirs in jobs_eta, sorted).
  const char* pending_index =
      user ? "jobs_eta" : left_out_arrays ? "jobs_pending_single" : "jobs_pending_order";
  std::string order_sql = fmt::format(
      "SELECT id FROM jobs {} WHERE state = 'pending'{}{}{} ORDER BY {}queue_order, id LIMIT ?1 OFFSET ?2",
      fifo && !user ? "" : fmt::format("INDEXED BY {}", pending_index), user ? fmt::format(" AND {}", kActive) : "",
      singles, of_user, fifo ? "" : "priority, ");
  std::vector<int64_t> ids;
  if (!user || page.pending_total > static_cast<int64_t>(offset)) {
    auto ids_stmt = db_->prepare(order_sql);
    if (!ids_stmt) return tl::unexpected(ids_stmt.error());
    ids_stmt->bind(1, static_cast<int64_t>(limit)).bind(2, static_cast<int64_t>(offset));
    bind_user(*ids_stmt);
    while (true) {
      auto row = ids_stmt->step();
      if (!row) return tl::unexpected(row.error());
      if (!*row) break;
      ids.push_back(ids_stmt->int64(0));
    }
  }
  if (!ids.empty()) {
    std::string list = fmt::format("[{}]", fmt::join(ids, ","));
    auto jobs = query_jobs("WHERE id IN (SELECT value FROM json_each(?))",
                           [&list](Statement& s) { s.bind(1, list); }, true, /*with_env=*/false);
    if (!jobs) return tl::unexpected(jobs.error());
    std::unordered_map<int64_t, size_t> rank;
    for (size_t i = 0; i < ids.size(); ++i) rank[ids[i]] = i;
    std::sort(jobs->begin(), jobs->end(),
              [&rank](const Job& a, const Job& b) { return rank[a.id] < rank[b.id]; });
    page.pending = std::move(*jobs);
  }
  if (!user) {
    auto pending = single_int(*db_, fmt::format("SELECT COUNT(*) FROM jobs WHERE state = 'pending'{}", singles));
    if (!pending) return tl::unexpected(pending.error());
    page.pending_total = *pending;
  }
  auto finished_total = user ? finished_count_of(*db_, *user) : single_int(*db_, kFinishedTotal);
  if (!finished_total) return tl::unexpected(finished_total.error());
  page.finished_total = *finished_total;
  return page;
}


}  // namespace gpuq::store
