// SPDX-License-Identifier: Apache-2.0
// Job arrays and grids (docs/sweeps.md, schema 11): the `arrays` rows and the reads that find
// an array's elements through jobs.array_id. Each read goes through an index (the arrays'
// primary key or name, jobs_by_array, jobs_active), so its cost follows the arrays and
// elements it returns, not the history kept. Arrays go with their last element
// (Store::prune_jobs).
#include <algorithm>

#include <fmt/format.h>

#include "store/store.h"

namespace gpuq::store {
namespace {

constexpr const char* kUnfinished = "state IN ('pending','held','running','blocked')";

// An array's first and last job: per state, one seek at each end of the state's run in
// jobs_by_array(array_id, state) — MIN(id) over the array alone reads every element's entry (a
// third of a second for a million, at each `gpuq status`).
constexpr const char* kArrayRange =
    "SELECT MIN(lo), MAX(hi) FROM (SELECT "
    "(SELECT MIN(id) FROM jobs WHERE array_id = ?1 AND state = s.value) AS lo, "
    "(SELECT MAX(id) FROM jobs WHERE array_id = ?1 AND state = s.value) AS hi "
    "FROM json_each('[\"pending\",\"held\",\"running\",\"blocked\",\"succeeded\",\"failed\","
    "\"cancelled\",\"skipped\"]') AS s)";

constexpr const char* kArrayColumns =
    "id, name, sweep, max_running, size, submitted_at, COALESCE(base, '')";

JobArray array_from_row(const Statement& row) {
  JobArray array;
  array.id = row.int64(0);
  array.name = row.text(1);
  array.sweep = row.text(2);
  array.max_running = static_cast<int>(row.int64(3));
  array.size = static_cast<int>(row.int64(4));
  array.submitted_at_ms = row.int64(5);
  array.base = row.text(6);
  return array;
}

Result<std::vector<JobArray>> collect_arrays(Statement& stmt) {
  std::vector<JobArray> out;
  while (true) {
    auto row = stmt.step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    out.push_back(array_from_row(stmt));
  }
  return out;
}

Result<std::optional<JobArray>> first_array(Statement& stmt) {
  auto arrays = collect_arrays(stmt);
  if (!arrays) return tl::unexpected(arrays.error());
  if (arrays->empty()) return std::optional<JobArray>();
  return std::optional<JobArray>(std::move(arrays->front()));
}

}  // namespace

Result<int64_t> Store::insert_array(const JobArray& array) {
  // Named before the UNIQUE constraint refuses it, so the message says what to do.
  auto existing = find_array_by_name(array.name);
  if (!existing) return tl::unexpected(existing.error());
  if (*existing) {
    return fail(Code::kConflict,
                fmt::format("an array named '{}' exists already (array {}): give the new one "
                            "another name",
                            array.name, (*existing)->id));
  }
  auto stmt = db_->prepare(
      "INSERT INTO arrays(name, sweep, max_running, size, submitted_at, base) "
      "VALUES (?, ?, ?, ?, ?, NULLIF(?, ''))");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, array.name)
      .bind(2, array.sweep)
      .bind(3, array.max_running)
      .bind(4, array.size)
      .bind(5, array.submitted_at_ms)
      .bind(6, array.base);
  if (auto st = stmt->run(); !st) return tl::unexpected(st.error());
  return db_->last_insert_rowid();
}

Result<std::optional<JobArray>> Store::find_array(int64_t id) {
  auto stmt = db_->prepare(fmt::format("SELECT {} FROM arrays WHERE id = ?", kArrayColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, id);
  return first_array(*stmt);
}

Result<std::optional<JobArray>> Store::find_array_by_name(const std::string& name) {
  auto stmt = db_->prepare(fmt::format("SELECT {} FROM arrays WHERE name = ?", kArrayColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, name);
  return first_array(*stmt);
}

Result<std::vector<int64_t>> Store::array_elements(int64_t array_id) {
  // One range of jobs_by_array, whose entries are in id order within an array_id.
  auto stmt = db_->prepare("SELECT id FROM jobs WHERE array_id = ? ORDER BY id");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, array_id);
  std::vector<int64_t> ids;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    ids.push_back(stmt->int64(0));
  }
  return ids;
}

Result<std::vector<Job>> Store::array_jobs(int64_t array_id, const std::vector<JobState>& states,
                                           bool with_runs, bool with_env) {
  std::string in;
  for (JobState state : states) in += fmt::format("{}'{}'", in.empty() ? "" : ",", to_string(state));
  std::string where = in.empty() ? "WHERE array_id = ?" : fmt::format("WHERE array_id = ? AND state IN ({})", in);
  return query_jobs(where,
                    [array_id](Statement& s) { s.bind(1, array_id); }, with_runs, with_env);
}

Result<std::vector<std::pair<int64_t, JobState>>> Store::array_job_states(int64_t array_id,
                                                                          const std::vector<JobState>& states) {
  std::string in;
  for (JobState state : states) in += fmt::format("{}'{}'", in.empty() ? "" : ",", to_string(state));
  auto stmt = db_->prepare(fmt::format("SELECT id, state FROM jobs WHERE array_id = ?{} ORDER BY id",
                                       in.empty() ? "" : fmt::format(" AND state IN ({})", in)));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, array_id);
  std::vector<std::pair<int64_t, JobState>> out;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    auto state = parse_job_state(stmt->text(1));
    if (!state) return tl::unexpected(state.error());
    out.emplace_back(stmt->int64(0), *state);
  }
  return out;
}

Result<std::vector<JobArray>> Store::active_arrays() {
  // Each array, and whether it has an unfinished element: a few probes of jobs_by_array per
  // array (arrays go with their last element), not a pass over the unfinished jobs' rows.
  auto stmt = db_->prepare(fmt::format(
      "SELECT {} FROM arrays WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.array_id = arrays.id "
      "AND jobs.{}) ORDER BY id",
      kArrayColumns, kUnfinished));
  if (!stmt) return tl::unexpected(stmt.error());
  return collect_arrays(*stmt);
}

Result<std::vector<std::pair<int64_t, std::string>>> Store::jobs_named_with_prefix(const std::string& prefix) {
  // [prefix, prefix with its last byte one higher): every name that starts with prefix, as a
  // range of the UNIQUE index on jobs.name (SQLite compares text bytewise: BINARY collation).
  if (prefix.empty() || static_cast<unsigned char>(prefix.back()) == 0xFF) {
    return fail(Code::kInvalidArgument, "a name prefix must end in a byte below 0xFF");
  }
  std::string end = prefix;
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  auto stmt = db_->prepare("SELECT id, name FROM jobs WHERE name >= ? AND name < ?");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, prefix).bind(2, end);
  std::vector<std::pair<int64_t, std::string>> out;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    out.emplace_back(stmt->int64(0), stmt->text(1));
  }
  return out;
}

Result<Store::StateCounts> Store::array_counts(int64_t array_id) {
  auto stmt = db_->prepare(
      "SELECT state, COUNT(*) FROM jobs WHERE array_id = ? GROUP BY state ORDER BY state");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, array_id);
  StateCounts counts;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    auto state = parse_job_state(stmt->text(0));
    if (!state) return tl::unexpected(state.error());
    counts.emplace_back(*state, stmt->int64(1));
  }
  return counts;
}

Result<bool> Store::array_unfinished(int64_t array_id) {
  auto stmt = db_->prepare(fmt::format(
      "SELECT EXISTS (SELECT 1 FROM jobs WHERE array_id = ? AND {})", kUnfinished));
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, array_id);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return *row && stmt->int64(0) != 0;
}

Result<std::vector<Store::ArrayElement>> Store::array_element_rows(int64_t array_id) {
  // The latest run of each element through runs' UNIQUE (job_id, number) index.
  auto stmt = db_->prepare(
      "SELECT j.id, j.name, j.state, r.number, r.exit_code, r.signal FROM jobs j "
      "LEFT JOIN runs r ON r.job_id = j.id AND r.number = "
      "(SELECT MAX(number) FROM runs WHERE job_id = j.id) "
      "WHERE j.array_id = ? ORDER BY j.id");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, array_id);
  std::vector<ArrayElement> out;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    ArrayElement element;
    element.id = stmt->int64(0);
    element.name = stmt->text(1);
    auto state = parse_job_state(stmt->text(2));
    if (!state) return tl::unexpected(state.error());
    element.state = *state;
    element.runs = stmt->is_null(3) ? 0 : static_cast<int>(stmt->int64(3));
    if (!stmt->is_null(4)) element.exit_code = static_cast<int>(stmt->int64(4));
    if (!stmt->is_null(5)) element.signal = static_cast<int>(stmt->int64(5));
    out.push_back(std::move(element));
  }
  return out;
}

Result<Store::ArrayUsage> Store::array_usage(int64_t array_id, int64_t now_ms) {
  auto stmt = db_->prepare(
      "SELECT COALESCE(MIN(started_at), 0), COALESCE(MAX(ended_at), 0), "
      "COALESCE(SUM(ended_at IS NULL), 0), "
      "COALESCE(SUM((COALESCE(ended_at, ?1) - started_at) * json_array_length(gpus)), 0) "
      "FROM runs WHERE job_id IN (SELECT id FROM jobs WHERE array_id = ?2)");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, now_ms).bind(2, array_id);
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  ArrayUsage usage;
  if (!*row) return usage;
  usage.first_start_ms = stmt->int64(0);
  usage.last_end_ms = stmt->int64(1);
  usage.running = stmt->int64(2);
  usage.gpu_ms = std::max<int64_t>(0, stmt->int64(3));
  return usage;
}

Result<std::vector<Store::ArraySummary>> Store::active_array_summaries() {
  auto arrays = active_arrays();
  if (!arrays) return tl::unexpected(arrays.error());
  std::vector<ArraySummary> out;
  out.reserve(arrays->size());
  for (JobArray& array : *arrays) {
    ArraySummary summary;
    auto counts = array_counts(array.id);
    if (!counts) return tl::unexpected(counts.error());
    summary.counts = std::move(*counts);
    auto range = db_->prepare(kArrayRange);
    if (!range) return tl::unexpected(range.error());
    range->bind(1, array.id);
    auto row = range->step();
    if (!row) return tl::unexpected(row.error());
    if (*row && !range->is_null(0)) {
      summary.first_job = range->int64(0);
      summary.last_job = range->int64(1);
    }
    summary.array = std::move(array);
    out.push_back(std::move(summary));
  }
  return out;
}

Result<int64_t> Store::next_array_id() {
  // AUTOINCREMENT keeps the highest id ever given in sqlite_sequence (absent before the first).
  auto stmt = db_->prepare(
      "SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'arrays'), 0) + 1");
  if (!stmt) return tl::unexpected(stmt.error());
  auto row = stmt->step();
  if (!row) return tl::unexpected(row.error());
  return stmt->int64(0);
}

}  // namespace gpuq::store
