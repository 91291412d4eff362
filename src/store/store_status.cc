// The jobs GET /v1/status shows: every unfinished job and the latest finished ones, read
// through indexes (jobs_active, jobs_finished) so that a long history costs nothing here.
#include <cstdint>

#include <fmt/format.h>

#include "store/store.h"

namespace gpuq::store {
namespace {

constexpr const char* kActive = "state IN ('pending','held','running','blocked')";

// The latest finished jobs: the newest entries of jobs_finished (schema 7), whose WHERE
// (finished_at IS NOT NULL) this repeats, as SQLite uses a partial index only for a query
// that implies its WHERE.
constexpr const char* kLatestFinished =
    "SELECT id FROM jobs WHERE finished_at IS NOT NULL AND "
    "state IN ('succeeded','failed','cancelled','skipped') "
    "ORDER BY finished_at DESC, id DESC LIMIT ?";

}  // namespace

Result<Store::StatusJobs> Store::status_jobs(std::optional<size_t> finished_limit) {
  StatusJobs out;
  // LIMIT -1 is SQLite's "no limit".
  int64_t limit = finished_limit ? static_cast<int64_t>(*finished_limit) : -1;
  auto jobs = query_jobs(
      fmt::format("WHERE {} OR id IN ({})", kActive, kLatestFinished),
      [limit](Statement& s) { s.bind(1, limit); }, true);
  if (!jobs) return tl::unexpected(jobs.error());
  for (Job& job : *jobs) (is_terminal(job.state) ? out.finished : out.active).push_back(std::move(job));
  // Every job is active or finished: all jobs (which SQLite counts page by page in its
  // smallest index, without decoding rows) less the active ones (an index range).
  auto count = db_->prepare(fmt::format(
      "SELECT (SELECT COUNT(*) FROM jobs) - (SELECT COUNT(*) FROM jobs WHERE {})", kActive));
  if (!count) return tl::unexpected(count.error());
  auto row = count->step();
  if (!row) return tl::unexpected(row.error());
  out.finished_total = count->int64(0);
  return out;
}

}  // namespace gpuq::store
