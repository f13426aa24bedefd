#include "sqlite_client.hpp"

#include <chrono>
#include <random>
#include <thread>

#include "common.hpp"

namespace readpast::bench {
namespace {

// Short random sleeps instead of SQLite's default schedule (1, 2, 5, 10, ... 100 ms), which
// would make the ceiling look worse than SQLite is.
int on_busy(void*, int tries) {
  thread_local std::minstd_rand random(std::random_device{}());
  if (tries > 20000) return 0;
  std::this_thread::sleep_for(std::chrono::microseconds(100 + random() % 900));
  return 1;
}

}  // namespace

SqliteStmt::SqliteStmt(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
    fail(std::string("sqlite: preparing '") + sql + "': " + sqlite3_errmsg(db));
  }
}

SqliteStmt::~SqliteStmt() {
  sqlite3_finalize(stmt_);
}

SqliteStmt& SqliteStmt::bind(int index, std::int64_t v) {
  sqlite3_bind_int64(stmt_, index, v);
  return *this;
}

SqliteStmt& SqliteStmt::bind_text(int index, std::string_view v) {
  sqlite3_bind_text64(stmt_, index, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
  return *this;
}

SqliteStmt& SqliteStmt::bind_blob(int index, std::string_view v) {
  sqlite3_bind_blob64(stmt_, index, v.empty() ? "" : v.data(), v.size(), SQLITE_STATIC);
  return *this;
}

bool SqliteStmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  const std::string why = sqlite3_errmsg(db_);
  sqlite3_reset(stmt_);
  fail("sqlite: " + why);
}

void SqliteStmt::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string_view SqliteStmt::blob(int col) const {
  const void* data = sqlite3_column_blob(stmt_, col);
  const int size = sqlite3_column_bytes(stmt_, col);
  return {static_cast<const char*>(data), static_cast<std::size_t>(size)};
}

SqliteDb::SqliteDb(const std::string& path, const std::string& synchronous, int page_size) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) fail("sqlite: cannot open " + path);
  sqlite3_busy_handler(raw, on_busy, nullptr);
  // Before anything writes a new file; a no-op on a file that exists.
  exec("PRAGMA page_size=" + std::to_string(page_size > 0 ? page_size : kDefaultSqlitePageSize));
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=" + synchronous);
}

void SqliteDb::exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string why = error != nullptr ? error : "unknown error";
    sqlite3_free(error);
    fail(std::string("sqlite: ") + std::string(sql).substr(0, 200) + ": " + why);
  }
}

std::int64_t SqliteDb::scalar_int(const char* sql) {
  SqliteStmt stmt(db_.get(), sql);
  if (!stmt.step()) return 0;
  return stmt.int64(0);
}

}  // namespace readpast::bench
