// SPDX-License-Identifier: Apache-2.0
// The store's reads for /metrics: counts grouped in SQL, so a scrape or a start costs one
// query each rather than a walk over every row in C++.
#include "store/store.h"

namespace gpuq::store {
namespace {

Result<Store::Counts> grouped(Statement& stmt) {
  Store::Counts out;
  while (true) {
    auto row = stmt.step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    out.emplace_back(stmt.text(0), stmt.int64(1));
  }
  return out;
}

}  // namespace

// Counts of the rows there are plus those retention pruned (pruned_counts, schema 7), so the
// all-time counters never go back after a restart.
Result<Store::Counts> Store::event_counts() {
  auto stmt = db_->prepare(
      "SELECT kind, SUM(n) FROM (SELECT kind, COUNT(*) AS n FROM events GROUP BY kind UNION ALL "
      "SELECT key, count FROM pruned_counts WHERE family = 'event') GROUP BY kind ORDER BY kind");
  if (!stmt) return tl::unexpected(stmt.error());
  return grouped(*stmt);
}

Result<Store::Counts> Store::job_counts() {
  auto stmt = db_->prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state ORDER BY state");
  if (!stmt) return tl::unexpected(stmt.error());
  return grouped(*stmt);
}

Result<Store::Counts> Store::run_counts() {
  auto stmt = db_->prepare(
      "SELECT outcome, SUM(n) FROM (SELECT outcome, COUNT(*) AS n FROM runs GROUP BY outcome "
      "UNION ALL SELECT key, count FROM pruned_counts WHERE family = 'run') GROUP BY outcome "
      "ORDER BY outcome");
  if (!stmt) return tl::unexpected(stmt.error());
  return grouped(*stmt);
}

Result<int64_t> Store::requeued_at(int64_t job_id) {
  // The events of one job are few and indexed by job (events_by_job).
  auto stmt = db_->prepare(
      "SELECT COALESCE(MAX(time), 0) FROM events WHERE job_id = ? AND kind IN "
      "('job.retried', 'job.retrying', 'job.preempted', 'job.requeued')");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, job_id);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return *row ? stmt->int64(0) : 0;
}

}  // namespace gpuq::store
