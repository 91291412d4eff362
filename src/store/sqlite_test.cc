// SPDX-License-Identifier: Apache-2.0
// The connection settings the store's guarantees rest on.
#include "store/sqlite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace gpuq::store {
namespace {

int64_t pragma(Database& db, const std::string& name) {
  auto stmt = db.prepare("PRAGMA " + name);
  EXPECT_TRUE(stmt);
  auto row = stmt->step();
  EXPECT_TRUE(row && *row);
  return stmt->int64(0);
}

TEST(Sqlite, TheWritableConnectionSyncsEveryCommit) {
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-sqlite-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    auto db = Database::open((dir / "t.db").string(), false);
    ASSERT_TRUE(db) << db.error().message;
    // 2 = FULL: a commit is on disk before it is answered (NORMAL, 1, may lose the last
    // commits to a power cut in WAL mode).
    EXPECT_EQ(pragma(**db, "synchronous"), 2);
    auto mode = (*db)->prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode);
    auto row = mode->step();
    ASSERT_TRUE(row && *row);
    EXPECT_EQ(mode->text(0), "wal");
  }
  std::filesystem::remove_all(dir);
}

// SQLite keeps no memory statistics in this process: with them every allocation it makes takes
// a global mutex (sqlite.cc). sqlite3_memory_used() reads 0 when they are off.
TEST(Sqlite, KeepsNoMemoryStatistics) {
  auto dir = std::filesystem::temp_directory_path() / ("gpuq-sqlite-mem-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  {
    auto db = Database::open((dir / "t.db").string(), false);
    ASSERT_TRUE(db) << db.error().message;
    ASSERT_TRUE((*db)->exec("CREATE TABLE t (x TEXT); INSERT INTO t VALUES (hex(randomblob(5000)))"));
    EXPECT_EQ(sqlite3_memory_used(), 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuq::store
