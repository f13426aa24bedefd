// bench/sqlite_client.hpp — a minimal SQLite client for the benchmark's administration and
// its raw-SQL ceiling (written against the C API directly, not readpast's engine).
//
// Thread-safety: an SqliteDb and its statements are used by one thread at a time.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace readpast::bench {

class SqliteStmt {
 public:
  SqliteStmt(sqlite3* db, const char* sql);
  ~SqliteStmt();
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;

  SqliteStmt& bind(int index, std::int64_t v);
  SqliteStmt& bind_text(int index, std::string_view v);
  SqliteStmt& bind_blob(int index, std::string_view v);
  // true: a row is ready; false: done. Throws on error.
  bool step();
  void reset();
  std::int64_t int64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string_view blob(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// The page size readpast gives a new file (Connection::kDefaultPageSize in
// src/engines/sqlite/sqlite_connection.hpp), so that the raw ceiling writes the same pages.
inline constexpr int kDefaultSqlitePageSize = 2048;

class SqliteDb {
 public:
  // Opens (creating) the file in WAL mode with the given synchronous level and a
  // busy handler that retries every 0.1-1 ms, like readpast's, for up to 10 s.
  // A new file gets page_size-byte pages (0: kDefaultSqlitePageSize); an existing one keeps
  // its own.
  explicit SqliteDb(const std::string& path, const std::string& synchronous = "full",
                    int page_size = 0);
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  void exec(const char* sql);
  void exec(const std::string& sql) { exec(sql.c_str()); }
  std::int64_t scalar_int(const char* sql);
  sqlite3* raw() const { return db_.get(); }

 private:
  struct Closer {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
  };
  std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace readpast::bench
