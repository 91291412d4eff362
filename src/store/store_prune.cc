// SPDX-License-Identifier: Apache-2.0
// Retention: choosing and deleting finished jobs older than `[retention] keep`, with every row
// that refers to them and the arrays left without an element, and old job-less events. The
// queue actor calls these in batches, one transaction each, so a prune never holds the store
// for long.
// Lists of ids travel as one JSON array bound to one parameter (json_each), so each step is
// one statement whatever the batch size.
#include <fmt/format.h>

#include "store/codec.h"
#include "store/store.h"

namespace gpuq::store {
namespace {

// Finished jobs: those with a finish time (the WHERE of the jobs_finished index, schema 7,
// so SQLite uses it), checked by state as well.
constexpr const char* kFinished =
    "finished_at IS NOT NULL AND state IN ('succeeded','failed','cancelled','skipped')";

// A job whose cleanup is not confirmed (pending, or a GPU in attention waiting for a person)
// keeps its run: that run is what holds the GPU back and names the processes left over.
constexpr const char* kCleanupOpen =
    "EXISTS (SELECT 1 FROM runs WHERE runs.job_id = jobs.id AND cleanup IN ('pending','attention'))";

Result<int64_t> count_of(Database& db, const std::string& sql,
                         const std::function<void(Statement&)>& bind) {
  auto stmt = db.prepare(sql);
  if (!stmt) return tl::unexpected(stmt.error());
  bind(*stmt);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return stmt->int64(0);
}

Status run_with_ids(Database& db, const std::string& sql, const std::string& ids) {
  auto stmt = db.prepare(sql);
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, ids).run();
}

}  // namespace

Result<int64_t> Store::last_event_seq_of(const std::vector<int64_t>& job_ids) {
  return count_of(*db_,
                  "SELECT COALESCE(MAX(seq), 0) FROM events WHERE job_id IN "
                  "(SELECT value FROM json_each(?))",
                  [&](Statement& s) { s.bind(1, encode_ids(job_ids)); });
}

Result<Store::PruneSelection> Store::select_prunable(int64_t cutoff_ms,
                                                     const std::unordered_set<int64_t>& keep,
                                                     size_t limit) {
  PruneSelection selection;
  if (limit > 0) {
    auto stmt = db_->prepare(fmt::format(
        "SELECT id FROM jobs WHERE {} AND finished_at < ? AND NOT {} ORDER BY finished_at, id",
        kFinished, kCleanupOpen));
    if (!stmt) return tl::unexpected(stmt.error());
    stmt->bind(1, cutoff_ms);
    // Kept jobs are passed over, so this reads at most |keep| + limit index entries.
    while (selection.job_ids.size() < limit) {
      auto row = stmt->step();
      if (!row) return tl::unexpected(row.error());
      if (!*row) break;
      if (!keep.count(stmt->int64(0))) selection.job_ids.push_back(stmt->int64(0));
    }
  }
  std::vector<int64_t> kept(keep.begin(), keep.end());
  auto kept_count = count_of(
      *db_,
      fmt::format("SELECT COUNT(*) FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND {} "
                  "AND finished_at < ?",
                  kFinished),
      [&](Statement& s) { s.bind(1, encode_ids(kept)).bind(2, cutoff_ms); });
  if (!kept_count) return tl::unexpected(kept_count.error());
  selection.kept_for_dependents = *kept_count;
  if (selection.job_ids.empty()) return selection;
  std::string ids = encode_ids(selection.job_ids);
  auto bind_ids = [&](Statement& s) { s.bind(1, ids); };
  auto runs = count_of(*db_, "SELECT COUNT(*) FROM runs WHERE job_id IN (SELECT value FROM json_each(?))", bind_ids);
  if (!runs) return tl::unexpected(runs.error());
  auto events = count_of(*db_, "SELECT COUNT(*) FROM events WHERE job_id IN (SELECT value FROM json_each(?))", bind_ids);
  if (!events) return tl::unexpected(events.error());
  selection.runs = *runs;
  selection.events = *events;
  return selection;
}

Status Store::prune_jobs(const std::vector<int64_t>& ids) {
  if (ids.empty()) return ok();
  std::string list = encode_ids(ids);
  // Refuse the whole batch rather than delete part of what a caller did not mean: only
  // finished jobs whose cleanup is confirmed may go.
  auto refused = db_->prepare(fmt::format(
      "SELECT id, state FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND (NOT ({}) OR {}) "
      "LIMIT 1",
      kFinished, kCleanupOpen));
  if (!refused) return tl::unexpected(refused.error());
  refused->bind(1, list);
  auto row = refused->step();
  if (!row) return tl::unexpected(row.error());
  if (*row) {
    return fail(Code::kFailedPrecondition,
                fmt::format("job {} ({}) cannot be pruned: only finished jobs whose cleanup is "
                            "confirmed can",
                            refused->int64(0), refused->text(1)));
  }
  // The arrays these jobs are elements of, read before the jobs go: those left without an
  // element go after them (jobs.array_id refers to arrays, so not before).
  auto arrays = db_->prepare(
      "SELECT DISTINCT array_id FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND "
      "array_id IS NOT NULL");
  if (!arrays) return tl::unexpected(arrays.error());
  arrays->bind(1, list);
  std::vector<int64_t> array_ids;
  while (true) {
    auto array_row = arrays->step();
    if (!array_row) return tl::unexpected(array_row.error());
    if (!*array_row) break;
    array_ids.push_back(arrays->int64(0));
  }
  // Tallies first, so /metrics' all-time counters keep what is deleted next.
  const char* steps[] = {
      "INSERT INTO pruned_counts(family, key, count) SELECT 'event', kind, COUNT(*) FROM events "
      "WHERE job_id IN (SELECT value FROM json_each(?1)) GROUP BY kind "
      "ON CONFLICT(family, key) DO UPDATE SET count = count + excluded.count",
      "INSERT INTO pruned_counts(family, key, count) SELECT 'run', outcome, COUNT(*) FROM runs "
      "WHERE job_id IN (SELECT value FROM json_each(?1)) GROUP BY outcome "
      "ON CONFLICT(family, key) DO UPDATE SET count = count + excluded.count",
      "DELETE FROM events WHERE job_id IN (SELECT value FROM json_each(?1))",
      // Samples before their runs (they refer to them), one range of the key per run.
      "DELETE FROM run_samples WHERE run_id IN "
      "(SELECT id FROM runs WHERE job_id IN (SELECT value FROM json_each(?1)))",
      "DELETE FROM runs WHERE job_id IN (SELECT value FROM json_each(?1))",
      // A job watcher's episode is keyed "job.<watcher>:<job id>" (daemon/watchers.h).
      "DELETE FROM watch_episodes WHERE key GLOB 'job.*:*' AND "
      "substr(key, instr(key, ':') + 1) IN (SELECT CAST(value AS TEXT) FROM json_each(?1))",
      "DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?1))",
  };
  for (const char* sql : steps) {
    if (auto st = run_with_ids(*db_, sql, list); !st) return st;
  }
  if (array_ids.empty()) return ok();
  // An array goes with its last element; "any element left?" is one probe of jobs_by_array.
  return run_with_ids(*db_,
                      "DELETE FROM arrays WHERE id IN (SELECT value FROM json_each(?1)) AND "
                      "NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.array_id = arrays.id)",
                      encode_ids(array_ids));
}

Result<int64_t> Store::prune_events(int64_t cutoff_ms, int64_t max_seq) {
  // Through events_jobless (schema 7), job-less events by time, so the work is the events that
  // go. Named, because without statistics SQLite prefers events_by_job (job_id IS NULL, seq <=
  // cursor), which walks every job-less event up to the cursor, the recent ones included.
  constexpr const char* kOld =
      "events INDEXED BY events_jobless WHERE job_id IS NULL AND time < ?1 AND seq <= ?2";
  auto tally = db_->prepare(fmt::format(
      "INSERT INTO pruned_counts(family, key, count) SELECT 'event', kind, COUNT(*) FROM {} "
      "GROUP BY kind ON CONFLICT(family, key) DO UPDATE SET count = count + excluded.count",
      kOld));
  if (!tally) return tl::unexpected(tally.error());
  if (auto st = tally->bind(1, cutoff_ms).bind(2, max_seq).run(); !st) return tl::unexpected(st.error());
  auto remove = db_->prepare(fmt::format("DELETE FROM {}", kOld));
  if (!remove) return tl::unexpected(remove.error());
  if (auto st = remove->bind(1, cutoff_ms).bind(2, max_seq).run(); !st) return tl::unexpected(st.error());
  return db_->changes();
}

}  // namespace gpuq::store
