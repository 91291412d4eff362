// SPDX-License-Identifier: Apache-2.0
// The watchers' open episodes (daemon/episodes.h), kept so that a restarted daemon neither
// repeats the start of an episode nor forgets to end it.
#include "store/store.h"

namespace gpuq::store {

Status Store::put_episode(const Episode& episode) {
  auto stmt = db_->prepare(
      "INSERT OR REPLACE INTO watch_episodes(key, kind, since, reported, data) VALUES (?, ?, ?, ?, ?)");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, episode.key)
      .bind(2, episode.kind)
      .bind(3, episode.since_ms)
      .bind(4, episode.reported_ms)
      .bind(5, episode.data)
      .run();
}

Status Store::delete_episode(const std::string& key) {
  auto stmt = db_->prepare("DELETE FROM watch_episodes WHERE key = ?");
  if (!stmt) return tl::unexpected(stmt.error());
  return stmt->bind(1, key).run();
}

Result<std::vector<Store::Episode>> Store::episodes() {
  auto stmt = db_->prepare("SELECT key, kind, since, reported, data FROM watch_episodes ORDER BY key");
  if (!stmt) return tl::unexpected(stmt.error());
  std::vector<Episode> out;
  while (true) {
    auto row = stmt->step();
    if (!row) return tl::unexpected(row.error());
    if (!*row) break;
    out.push_back({stmt->text(0), stmt->text(1), stmt->int64(2), stmt->int64(3), stmt->text(4)});
  }
  return out;
}

}  // namespace gpuq::store
