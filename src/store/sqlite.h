// SPDX-License-Identifier: Apache-2.0
// A thin RAII layer over the SQLite C API: a Database owns one connection and a cache of
// prepared statements; a Statement is borrowed from that cache and reset when it goes out of
// scope. Errors come back as Status with SQLite's message. One Database is used by one thread
// at a time (SQLite's "multi-thread" mode); other threads open their own connections.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <sqlite3.h>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/status.h"

namespace gpuq::store {

class Statement {
 public:
  explicit Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  Statement(const Statement&) = delete;
  Statement(Statement&& other) noexcept : stmt_(other.stmt_), db_(other.db_) { other.stmt_ = nullptr; }
  ~Statement();

  // Binds by 1-based position.
  Statement& bind(int pos, int64_t value);
  Statement& bind(int pos, int value) { return bind(pos, static_cast<int64_t>(value)); }
  Statement& bind(int pos, std::string_view value);
  Statement& bind(int pos, const std::string& value) { return bind(pos, std::string_view(value)); }
  Statement& bind(int pos, const char* value) { return bind(pos, std::string_view(value)); }
  Statement& bind_null(int pos);
  template <class T>
  Statement& bind(int pos, const std::optional<T>& value) {
    return value ? bind(pos, *value) : bind_null(pos);
  }

  // Advances to the next row: true when a row is ready, false when done.
  Result<bool> step();
  // Runs to completion (for statements without rows).
  Status run();

  int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string text(int col) const;
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int column_count() const { return sqlite3_column_count(stmt_); }

 private:
  sqlite3_stmt* stmt_;
  sqlite3* db_;
};

class Database {
 public:
  // Opens (creating when writable) the database at `path`.
  static Result<std::unique_ptr<Database>> open(const std::string& path, bool read_only);
  ~Database();

  // Runs SQL text that returns no rows (may hold several statements).
  Status exec(std::string_view sql);
  // A cached prepared statement for `sql`.
  Result<Statement> prepare(const std::string& sql);
  int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
  // Rows changed by the latest INSERT, UPDATE or DELETE.
  int64_t changes() const { return sqlite3_changes64(db_); }
  // Virtual-machine steps of every prepared statement since it was prepared: a measure of a
  // query's work that does not depend on the machine, so a test can check that a read does
  // not grow with the history kept (exec() statements are not counted).
  int64_t vm_steps() const;
  // Sorts (ORDER BY or GROUP BY that no index gives) every prepared statement has made since
  // it was prepared: a test checks that a read of a million rows never sorts them.
  int64_t sorts() const;
  const std::string& path() const { return path_; }

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

// Runs `fn` inside BEGIN IMMEDIATE ... COMMIT; rolls back when it fails.
template <class Fn>
auto in_transaction(Database& db, Fn&& fn) -> decltype(fn()) {
  if (auto began = db.exec("BEGIN IMMEDIATE"); !began) return tl::unexpected(began.error());
  auto result = fn();
  if (!result) {
    (void)db.exec("ROLLBACK");
    return result;
  }
  if (auto committed = db.exec("COMMIT"); !committed) {
    (void)db.exec("ROLLBACK");
    return tl::unexpected(committed.error());
  }
  return result;
}

}  // namespace gpuq::store
