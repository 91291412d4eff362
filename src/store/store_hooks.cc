// SPDX-License-Identifier: Apache-2.0
// The hook_cursors table (schema 5): where each event hook stands in the event log.
#include "store/store.h"

namespace gpuq::store {

Result<std::vector<Store::HookCursor>> Store::hook_cursors() {
  auto stmt = db_->prepare(
      "SELECT name, seq, delivered, last_error, last_error_at, updated_at FROM hook_cursors "
      "ORDER BY name");
  if (!stmt) return tl::unexpected(stmt.error());
  std::vector<HookCursor> cursors;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    cursors.push_back(HookCursor{stmt->text(0), stmt->int64(1), stmt->int64(2), stmt->text(3),
                                 stmt->int64(4), stmt->int64(5)});
  }
  return cursors;
}

Status Store::commit_hook_cursor(const std::string& name, int64_t seq, int64_t delivered,
                                 int64_t now_ms) {
  // MAX: a late commit must never move a cursor back over events already delivered.
  auto stmt = db_->prepare(
      "INSERT INTO hook_cursors(name, seq, delivered, updated_at) VALUES (?, ?, ?, ?) "
      "ON CONFLICT(name) DO UPDATE SET seq = MAX(seq, excluded.seq), "
      "delivered = MAX(delivered, excluded.delivered), updated_at = excluded.updated_at");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, name).bind(2, seq).bind(3, delivered).bind(4, now_ms).run();
}

Status Store::record_hook_error(const std::string& name, const std::string& error, int64_t at_ms) {
  auto stmt = db_->prepare(
      "INSERT INTO hook_cursors(name, last_error, last_error_at, updated_at) VALUES (?, ?, ?, ?) "
      "ON CONFLICT(name) DO UPDATE SET last_error = excluded.last_error, "
      "last_error_at = excluded.last_error_at, updated_at = excluded.updated_at");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, name).bind(2, error).bind(3, at_ms).bind(4, at_ms).run();
}

}  // namespace gpuq::store
