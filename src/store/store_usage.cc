// SPDX-License-Identifier: Apache-2.0
// The dashboard's reads and the one write the probe adds: utilisation samples of runs, the
// runs that overlap a time window, and job-less events of one kind by time. Each read goes through an index of schema 9 (or older), so that its cost
// follows what it returns, not the history kept. Lists of ids travel as one JSON array bound
// to one parameter (json_each).
#include <algorithm>
#include <fmt/format.h>

#include "store/codec.h"
#include "store/store.h"

namespace gpuq::store {
Status Store::add_run_sample(int64_t run_id, const RunSample& sample) {
  auto stmt = db_->prepare(
      "INSERT OR REPLACE INTO run_samples(run_id, time, util, mem_mib) VALUES (?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, run_id).bind(2, sample.time_ms);
  if (sample.util >= 0) {
    stmt->bind(3, std::min(sample.util, 100));
  } else {
    stmt->bind_null(3);
  }
  return stmt->bind(4, std::max<int64_t>(0, sample.mem_mib)).run();
}

Result<std::vector<Store::UsageRun>> Store::usage_runs(int64_t from_ms, int64_t to_ms) {
  // Runs that ended after the window opened (runs_by_end) and the running ones (runs_running),
  // of those the ones that started before it closed.
  auto stmt = db_->prepare(
      "SELECT r.id, r.job_id, r.number, COALESCE(NULLIF(r.job_name, ''), j.name, ''), j.user, "
      "j.gpus, j.submitted_at, r.gpus, r.started_at, r.ended_at, r.outcome "
      "FROM runs r JOIN jobs j ON j.id = r.job_id WHERE r.id IN ("
      "  SELECT id FROM runs WHERE ended_at IS NOT NULL AND ended_at > ?1"
      "  UNION ALL SELECT id FROM runs WHERE outcome = 'running') "
      "AND r.started_at < ?2 ORDER BY r.started_at, r.id");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, from_ms).bind(2, to_ms);
  std::vector<UsageRun> out;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    UsageRun r;
    r.run_id = stmt->int64(0);
    r.job_id = stmt->int64(1);
    r.number = static_cast<int>(stmt->int64(2));
    r.name = stmt->text(3);
    r.user = stmt->text(4);
    r.gpus_requested = static_cast<int>(stmt->int64(5));
    r.submitted_at_ms = stmt->int64(6);
    r.gpus = decode_strings(stmt->text(7));
    r.started_at_ms = stmt->int64(8);
    r.ended_at_ms = stmt->is_null(9) ? 0 : stmt->int64(9);
    auto outcome = parse_run_outcome(stmt->text(10));
    if (!outcome) return tl::unexpected(outcome.error());
    r.outcome = *outcome;
    out.push_back(std::move(r));
  }
  return out;
}

Result<Store::SamplesByRun> Store::run_samples(const std::vector<int64_t>& run_ids, int64_t from_ms,
                                               int64_t to_ms) {
  SamplesByRun out;
  if (run_ids.empty()) return out;
  auto stmt = db_->prepare(
      "SELECT run_id, time, util, mem_mib FROM run_samples WHERE run_id IN "
      "(SELECT value FROM json_each(?1)) AND time >= ?2 AND time < ?3 ORDER BY run_id, time");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, encode_ids(run_ids)).bind(2, from_ms).bind(3, to_ms);
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    RunSample sample;
    sample.time_ms = stmt->int64(1);
    sample.util = stmt->is_null(2) ? -1 : static_cast<int>(stmt->int64(2));
    sample.mem_mib = stmt->int64(3);
    out[stmt->int64(0)].push_back(sample);
  }
  return out;
}

Result<std::vector<Event>> Store::jobless_events(const std::string& kind, int64_t from_ms,
                                                 int64_t to_ms, int64_t lookback_ms) {
  // Named, as in prune_events: without statistics SQLite would rather walk events_by_job.
  auto stmt = db_->prepare(
      "SELECT * FROM ("
      "  SELECT seq, time, kind, job_id, run_number, data FROM events INDEXED BY events_jobless "
      "  WHERE job_id IS NULL AND time >= ?3 AND time < ?1 AND kind = ?4 "
      "  ORDER BY time DESC, seq DESC LIMIT 1) "
      "UNION ALL SELECT * FROM ("
      "  SELECT seq, time, kind, job_id, run_number, data FROM events INDEXED BY events_jobless "
      "  WHERE job_id IS NULL AND time >= ?1 AND time < ?2 AND kind = ?4) "
      "ORDER BY time, seq");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, from_ms).bind(2, to_ms).bind(3, from_ms - std::max<int64_t>(0, lookback_ms)).bind(4, kind);
  std::vector<Event> out;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    Event e;
    e.seq = stmt->int64(0);
    e.time_ms = stmt->int64(1);
    e.kind = stmt->text(2);
    e.data = nlohmann::json::parse(stmt->text(5), nullptr, false);
    if (e.data.is_discarded()) e.data = nlohmann::json::object();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace gpuq::store
