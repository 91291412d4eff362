// Job arrays and grids (docs/sweeps.md, schema 11): the `arrays` rows and the reads that find
// an array's elements through jobs.array_id. Each read goes through an index (the arrays'
// primary key or name, jobs_by_array, jobs_active), so its cost follows the arrays and
// elements it returns, not the history kept. Arrays go with their last element
// (Store::prune_jobs).
#include <fmt/format.h>

#include "store/store.h"

namespace gpuq::store {
namespace {

constexpr const char* kArrayColumns = "id, name, sweep, max_running, size, submitted_at";

JobArray array_from_row(const Statement& row) {
  JobArray array;
  array.id = row.int64(0);
  array.name = row.text(1);
  array.sweep = row.text(2);
  array.max_running = static_cast<int>(row.int64(3));
  array.size = static_cast<int>(row.int64(4));
  array.submitted_at_ms = row.int64(5);
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
      "INSERT INTO arrays(name, sweep, max_running, size, submitted_at) VALUES (?, ?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  stmt->bind(1, array.name)
      .bind(2, array.sweep)
      .bind(3, array.max_running)
      .bind(4, array.size)
      .bind(5, array.submitted_at_ms);
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

Result<std::vector<JobArray>> Store::active_arrays() {
  // The unfinished jobs (jobs_active) that are elements, then their arrays by primary key.
  auto stmt = db_->prepare(fmt::format(
      "SELECT {} FROM arrays WHERE id IN (SELECT array_id FROM jobs WHERE "
      "state IN ('pending','held','running','blocked') AND array_id IS NOT NULL) ORDER BY id",
      kArrayColumns));
  if (!stmt) return tl::unexpected(stmt.error());
  return collect_arrays(*stmt);
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
