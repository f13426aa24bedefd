// engines/mariadb/mariadb_connection.hpp — one connection to MariaDB (Connector/C), its
// statements and results, and the mapping of MariaDB's errors onto readpast::Error.
//
// Statements with parameters are server-side prepared statements over the binary protocol:
// the engine's SQL (sql/statements.sql) is embedded with PARAMS=question
// (cmake/EmbedSql.cmake), each :name a '?', and the values go to the server apart from the
// SQL (mysql_stmt_bind_param), never spliced into its text. Each statement is prepared once
// per connection and kept until the connection closes. Statements without values (START
// TRANSACTION, COMMIT, the migration scripts, a statement without parameters) go over the text
// protocol as written.
//
// Every session runs with time_zone '+00:00', READ COMMITTED, strict SQL mode and autocommit;
// see docs/mariadb.md.
//
// Thread-safety: a Connection is used by one thread at a time (the pool lends it out).
#pragma once

#include <mysql.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "readpast/error.hpp"

namespace readpast::detail::mariadb {

struct Settings {
  std::string host;
  unsigned port = 3306;
  std::string socket;  // non-empty: connect over this unix socket
  std::string user;
  std::optional<std::string> password;
  std::string database;
  unsigned connect_timeout_s = 10;
  unsigned reply_timeout_s = 60;  // read and write timeout of every statement
  std::string redacted;           // the URL as it may be printed
};

// Values for the parameters of one statement, numbered from 1 (the constants EmbedSql
// generates). Text goes to the server in the connection's character set (utf8mb4); bytes as
// a binary string, which the server never checks against a character set.
class Params {
 public:
  explicit Params(int count) : values_(static_cast<std::size_t>(count)) {}
  Params& set(int n, std::int64_t value);
  Params& set(int n, int value) { return set(n, static_cast<std::int64_t>(value)); }
  Params& set(int n, double value);
  Params& set(int n, std::string_view text);
  Params& set(int n, const char* text) { return set(n, std::string_view(text)); }
  Params& set(int n, const std::string& text) { return set(n, std::string_view(text)); }
  Params& set_bytes(int n, std::string_view bytes);
  Params& set_null(int n);
  template <class T>
  Params& set_optional(int n, const std::optional<T>& value) {
    return value ? set(n, *value) : set_null(n);
  }

 private:
  friend class Connection;
  struct Unset {};
  struct Null {};
  struct Text {
    std::string value;
  };
  struct Bytes {
    std::string value;
  };
  using Value = std::variant<Unset, Null, std::int64_t, double, Text, Bytes>;
  Value& at(int n) { return values_.at(static_cast<std::size_t>(n - 1)); }

  std::vector<Value> values_;
};

// The rows of one result, read whole and owned (the connection's buffers are freed at once).
// Every cell is its text as MariaDB prints it (a number as digits), or the column's bytes.
class Rows {
 public:
  Rows() = default;
  // A text-protocol result (mysql_store_result); null: no result.
  explicit Rows(MYSQL_RES* result);

  std::size_t size() const noexcept { return columns_ == 0 ? 0 : cells_.size() / columns_; }
  bool empty() const noexcept { return cells_.empty(); }
  bool is_null(std::size_t row, std::size_t column) const;
  std::string_view text(std::size_t row, std::size_t column) const;
  std::int64_t int64(std::size_t row, std::size_t column) const;  // NULL reads as 0
  std::optional<std::int64_t> optional_int64(std::size_t row, std::size_t column) const;
  std::optional<std::string> optional_text(std::size_t row, std::size_t column) const;

 private:
  friend class Connection;
  const std::optional<std::string>& cell(std::size_t row, std::size_t column) const;

  std::size_t columns_ = 0;
  std::vector<std::optional<std::string>> cells_;  // row by row; nullopt: NULL
};

class Connection {
  // Only open() makes a Connection (make_unique needs a public constructor).
  struct Key {
    explicit Key() = default;
  };

 public:
  // Connects and sets the session up. kUnavailable (with the redacted URL and the server's
  // reason) when the server cannot be reached or refuses the login.
  static Result<std::unique_ptr<Connection>> open(const Settings& settings);
  struct CloseHandle {
    void operator()(MYSQL* handle) const noexcept { mysql_close(handle); }
  };
  using Handle = std::unique_ptr<MYSQL, CloseHandle>;
  Connection(Key, Handle handle) : handle_(std::move(handle)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement (or, with multi = true, a script of several) given as text, over the
  // text protocol: only for SQL that carries no values. Returns its rows (none for a
  // statement without a result).
  Result<Rows> query(std::string_view sql, bool multi = false);
  // The statement Q (an EmbedSql struct) with `params`, prepared on first use.
  template <class Q>
  Result<Rows> run(const Params& params) {
    return execute(Q::text, params, Q::positions);
  }
  template <class Q>
  Params params() {
    return Params(Q::param_count);
  }

  // Of the last statement: rows it matched (CLIENT_FOUND_ROWS), the id it inserted.
  std::uint64_t affected_rows() const noexcept { return affected_rows_; }
  std::uint64_t insert_id() const noexcept { return insert_id_; }
  // The MariaDB error number of the last failure (0: none).
  unsigned last_errno() const noexcept { return last_errno_; }
  // The connection is gone (lost, or the server went away) and must not be reused.
  bool broken() const noexcept { return broken_; }

 private:
  struct CloseStatement {
    void operator()(MYSQL_STMT* statement) const noexcept { mysql_stmt_close(statement); }
  };
  using Statement = std::unique_ptr<MYSQL_STMT, CloseStatement>;

  // `text`'s prepared statement: the cached one, or prepared now. Keyed by the address of the
  // embedded text, which is unique per statement and lives as long as the program.
  Result<MYSQL_STMT*> prepared(const char* text);
  Result<Rows> execute(const char* text, const Params& params, std::span<const int> positions);
  // The rows of the executed `statement`, read whole.
  Result<Rows> fetch(MYSQL_STMT* statement);
  Error error(unsigned number, const char* message);
  Error error() { return error(mysql_errno(handle_.get()), mysql_error(handle_.get())); }
  Error error(MYSQL_STMT* statement) {
    return error(mysql_stmt_errno(statement), mysql_stmt_error(statement));
  }

  Handle handle_;
  // After handle_, so that the statements are closed before the connection.
  std::unordered_map<const char*, Statement> statements_;
  std::uint64_t affected_rows_ = 0;
  std::uint64_t insert_id_ = 0;
  unsigned last_errno_ = 0;
  bool broken_ = false;
};

// ER_LOCK_DEADLOCK (1213) and ER_LOCK_WAIT_TIMEOUT (1205): the transaction is retried.
bool is_retryable_lock_error(unsigned error_number) noexcept;

}  // namespace readpast::detail::mariadb
