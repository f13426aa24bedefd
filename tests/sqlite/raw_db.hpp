// tests/sqlite/raw_db.hpp — a plain sqlite3 handle on a test's file, as another program would
// have it (SQLite's default VFS, none of readpast's settings).
//
// Thread-safety: one per thread.
#pragma once

#include <sqlite3.h>

#include <stdexcept>
#include <string>

namespace readpast::test {

class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("open");
    // The engine's connections register readpast_lease_token(); a stand-in, so that the
    // lease statements prepare here (for their plans) as they do there.
    auto stand_in = [](sqlite3_context* context, int, sqlite3_value**) {
      sqlite3_result_text(context, "00000000000000000000000000000000", 32, SQLITE_STATIC);
    };
    if (sqlite3_create_function_v2(db_, "readpast_lease_token", 0, SQLITE_UTF8, nullptr, stand_in,
                                   nullptr, nullptr, nullptr) != SQLITE_OK) {
      throw std::runtime_error("create_function");
    }
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  // Runs `sql`; returns the first column of the first row ("" when none), or throws.
  std::string scalar(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error(sql + ": " + sqlite3_errmsg(db_));
    }
    std::string value;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      throw std::runtime_error(sql + ": " + sqlite3_errmsg(db_));
    return value;
  }
  sqlite3* handle() { return db_; }
  // The steps of EXPLAIN QUERY PLAN, one per line.
  std::string plan(const std::string& sql) { return lines_of("EXPLAIN QUERY PLAN " + sql, 3); }
  // The opcodes of the program `sql` compiles to, one per line.
  std::string opcodes(const std::string& sql) { return lines_of("EXPLAIN " + sql, 1); }

 private:
  // Column `column` of every row of `sql`, one per line.
  std::string lines_of(const std::string& sql, int column) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error(sql + ": " + sqlite3_errmsg(db_));
    }
    std::string text;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      text += reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
      text += "\n";
    }
    sqlite3_finalize(stmt);
    return text;
  }

  sqlite3* db_ = nullptr;
};

}  // namespace readpast::test
