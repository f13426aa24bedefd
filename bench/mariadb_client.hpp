// bench/mariadb_client.hpp — a minimal MariaDB Connector/C client for what the benchmark does
// outside readpast: administration (reset, prefill, ANALYZE, waiting for purge), the snapshot
// holder, and the raw-SQL ceiling. Written against libmariadb directly, not readpast's engine,
// so that the ceiling owes nothing to the code it is a ceiling for. Built only when the
// mariadb engine is (READPAST_BENCH_MARIADB).
//
// Thread-safety: an MdbConn and its statements are used by one thread at a time.
#pragma once

#include <mysql.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common.hpp"

namespace readpast::bench {

// "mariadb://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?socket=/path]" (or mysql://), the form
// readpast takes; USER and PASSWORD may be %XX-encoded.
struct MdbUrl {
  std::string user;
  std::optional<std::string> password;
  std::string host;
  unsigned port = 3306;
  std::string database;
  std::string socket;  // non-empty: connect over this unix socket

  static MdbUrl parse(const std::string& url);  // fails (BenchError) on anything else
};

// A failed statement, with MariaDB's error number: the raw subject retries 1213 (deadlock)
// and 1205 (lock wait timeout); anything else stops the benchmark.
class MdbError : public BenchError {
 public:
  MdbError(const std::string& what, unsigned code) : BenchError(what), code_(code) {}
  unsigned code() const noexcept { return code_; }
  bool retryable() const noexcept { return code_ == 1213 || code_ == 1205; }

 private:
  unsigned code_;
};

// The rows of one result, kept whole (mysql_store_result); text protocol, so every value
// is its text (bytes for a blob).
class MdbRows {
 public:
  MdbRows() = default;
  explicit MdbRows(MYSQL_RES* result);

  std::size_t size() const noexcept { return rows_.size(); }
  bool empty() const noexcept { return rows_.empty(); }
  std::string_view text(std::size_t row, std::size_t col) const;
  std::int64_t int64(std::size_t row, std::size_t col) const;

 private:
  struct Free {
    void operator()(MYSQL_RES* r) const noexcept { mysql_free_result(r); }
  };
  std::unique_ptr<MYSQL_RES, Free> result_;
  struct Cell {
    const char* data;  // nullptr: NULL
    std::size_t size;
  };
  std::vector<std::vector<Cell>> rows_;
};

class MdbConn {
 public:
  // Connects (throws BenchError when it cannot) and sets the session up: READ COMMITTED,
  // autocommit, several statements per query allowed (so that a transaction's statements
  // can share a round trip).
  explicit MdbConn(const MdbUrl& url);
  explicit MdbConn(const std::string& url) : MdbConn(MdbUrl::parse(url)) {}
  MdbConn(const MdbConn&) = delete;
  MdbConn& operator=(const MdbConn&) = delete;

  // One or several statements, in one round trip; returns the rows of the last one that
  // returned rows (none when no statement did). Throws MdbError on the first that fails.
  MdbRows query(std::string_view sql);
  void exec(std::string_view sql) { (void)query(sql); }
  // The first value of the first row, as text ("" for none or NULL).
  std::string scalar(std::string_view sql);
  std::int64_t scalar_int(std::string_view sql);

  // Rows changed by the last statement.
  std::uint64_t affected_rows() const noexcept { return mysql_affected_rows(handle_.get()); }

  // A quoted literal of bytes, _binary'…' with every special byte escaped.
  std::string bytes_literal(std::string_view bytes) const;

  MYSQL* raw() const noexcept { return handle_.get(); }

 private:
  struct Closer {
    void operator()(MYSQL* m) const noexcept { mysql_close(m); }
  };
  [[noreturn]] void fail_here(std::string_view sql) const;
  std::unique_ptr<MYSQL, Closer> handle_;
};

// A server-side prepared statement whose parameters are all strings or bytes (binary
// protocol: no escaping, no parse per execution). execute() runs it once; execute_bulk()
// runs it for many parameter rows in one round trip (MariaDB's COM_STMT_BULK_EXECUTE,
// array binding, column-wise), the bulk form of an INSERT.
class MdbStmt {
 public:
  MdbStmt(MdbConn& conn, std::string_view sql);
  ~MdbStmt();
  MdbStmt(const MdbStmt&) = delete;
  MdbStmt& operator=(const MdbStmt&) = delete;

  // One value per parameter; returns the rows it changed.
  std::uint64_t execute(std::span<const std::string_view> params);
  // columns[p][row]: the value of parameter p in that row; every column the same length.
  std::uint64_t execute_bulk(std::span<const std::vector<std::string_view>> columns);

 private:
  [[noreturn]] void fail_here(std::string_view what) const;
  MYSQL_STMT* stmt_ = nullptr;
  std::string sql_;
  unsigned params_ = 0;
};

}  // namespace readpast::bench
