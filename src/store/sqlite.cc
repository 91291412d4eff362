// SPDX-License-Identifier: Apache-2.0
#include "store/sqlite.h"

#include <mutex>

#include <fmt/format.h>

namespace gpuq::store {
namespace {
tl::unexpected<Error> sqlite_error(sqlite3* db, std::string_view what) {
  return fail(Code::kIoError, fmt::format("{}: {}", what, sqlite3_errmsg(db)));
}

// Once per process, before SQLite's first use: no memory statistics. With them (the default of
// the library Debian builds) every allocation SQLite makes takes and releases a global mutex:
// 14% of the perf samples of a store-bound request (a cancel of 100,000 elements), ~10% of its
// CPU. Nothing here reads them. Each connection is used by one thread at a time, and opened
// SQLITE_OPEN_NOMUTEX. A process that used SQLite before this keeps its statistics
// (sqlite3_config refuses once the library is initialised), which is only slower.
void configure_sqlite_once() {
  static std::once_flag once;
  std::call_once(once, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
}
}  // namespace

Statement::~Statement() {
  if (stmt_) {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
}

Statement& Statement::bind(int pos, int64_t value) {
  sqlite3_bind_int64(stmt_, pos, value);
  return *this;
}

Statement& Statement::bind(int pos, std::string_view value) {
  sqlite3_bind_text(stmt_, pos, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind_null(int pos) {
  sqlite3_bind_null(stmt_, pos);
  return *this;
}

Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return sqlite_error(db_, "sqlite step");
}

Status Statement::run() {
  auto stepped = step();
  // Ready for the next bind-and-run with the same statement.
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  if (!stepped) return tl::unexpected(stepped.error());
  return ok();
}

std::string Statement::text(int col) const {
  const unsigned char* p = sqlite3_column_text(stmt_, col);
  if (!p) return "";
  return std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col));
}

Result<std::unique_ptr<Database>> Database::open(const std::string& path, bool read_only) {
  configure_sqlite_once();
  sqlite3* db = nullptr;
  int flags = read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  flags |= SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = fmt::format("cannot open the store {}: {}", path,
                                      db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return fail(Code::kIoError, message);
  }
  sqlite3_busy_timeout(db, 5000);
  auto database = std::unique_ptr<Database>(new Database(db, path));
  // synchronous=FULL: in WAL mode NORMAL skips the fsync at each commit, so a power cut can
  // roll back commits already answered (a submit's 201) or already delivered to hooks (and
  // then reuse their sequence numbers). FULL syncs the WAL before a commit returns.
  const char* pragmas = read_only ? "PRAGMA foreign_keys=ON;"
                                  : "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                                    "PRAGMA foreign_keys=ON;";
  if (auto st = database->exec(pragmas); !st) return tl::unexpected(st.error());
  return database;
}

Database::~Database() {
  for (auto& [sql, stmt] : cache_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

int64_t Database::vm_steps() const {
  int64_t steps = 0;
  for (const auto& [sql, stmt] : cache_) steps += sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_VM_STEP, 0);
  return steps;
}

int64_t Database::sorts() const {
  int64_t sorts = 0;
  for (const auto& [sql, stmt] : cache_) sorts += sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_SORT, 0);
  return sorts;
}

Status Database::exec(std::string_view sql) {
  char* message = nullptr;
  std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string error = fmt::format("sqlite: {} (in: {:.80})", message ? message : "error", text);
    sqlite3_free(message);
    return fail(Code::kIoError, error);
  }
  return ok();
}

Result<Statement> Database::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) !=
        SQLITE_OK) {
      return sqlite_error(db_, "sqlite prepare '" + sql + "'");
    }
    it = cache_.emplace(sql, stmt).first;
  }
  return Statement(it->second, db_);
}

}  // namespace gpuq::store
