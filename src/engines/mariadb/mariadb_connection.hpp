// engines/mariadb/mariadb_connection.hpp — one connection to MariaDB (Connector/C), its
// statements and results, and the mapping of MariaDB's errors onto readpast::Error.
//
// Statements go over the text protocol. The engine's SQL (sql/statements.sql) is embedded
// with PARAMS=question (cmake/EmbedSql.cmake): each :name becomes '?', and Params::render puts
// the value bound to the parameter at each '?' there, as an escaped literal
// (mysql_real_escape_string for text, X'..' for bytes, digits for numbers). The only raw SQL
// ever put at a '?' is kNowMicros, a constant of this engine.
//
// Every session runs with time_zone '+00:00', READ COMMITTED, strict SQL mode and autocommit;
// see docs/mariadb.md.
//
// Thread-safety: a Connection is used by one thread at a time (the pool lends it out).
#pragma once

#include <mysql.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/error.hpp"

namespace readpast::detail::mariadb {

// The database's clock, in microseconds since the Unix epoch: the value every :now is bound
// to, so that times come from the server and never from the client's clock.
inline constexpr std::string_view kNowMicros = "CAST(UNIX_TIMESTAMP(NOW(6)) * 1000000 AS SIGNED)";

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
// generates), each kept as the SQL literal it becomes.
class Params {
 public:
  Params(MYSQL* handle, int count) : handle_(handle), literals_(static_cast<std::size_t>(count)) {}
  Params& set(int n, std::int64_t value);
  Params& set(int n, int value) { return set(n, static_cast<std::int64_t>(value)); }
  Params& set(int n, double value);
  Params& set(int n, std::string_view text);  // a quoted, escaped string
  Params& set(int n, const char* text) { return set(n, std::string_view(text)); }
  Params& set(int n, const std::string& text) { return set(n, std::string_view(text)); }
  Params& set_bytes(int n, std::string_view bytes);  // X'...' (the empty string: '')
  Params& set_null(int n);
  Params& set_now(int n) { return set_raw(n, kNowMicros); }
  // The server's clock plus `micros`.
  Params& set_now_plus(int n, std::int64_t micros) {
    return set_raw(n, std::string(kNowMicros) + " + " + std::to_string(micros));
  }
  template <class T>
  Params& set_optional(int n, const std::optional<T>& value) {
    return value ? set(n, *value) : set_null(n);
  }

  // The statement text with every '?' (outside quotes) replaced by the literal of the
  // parameter positions[i] names. Every parameter must have been set.
  std::string render(std::string_view text, std::span<const int> positions) const;

 private:
  Params& set_raw(int n, std::string_view sql);
  std::string& at(int n) { return literals_.at(static_cast<std::size_t>(n - 1)); }

  MYSQL* handle_;
  std::vector<std::string> literals_;
};

// The rows of one result, kept whole (mysql_store_result).
class Rows {
 public:
  Rows() = default;
  explicit Rows(MYSQL_RES* result);
  Rows(Rows&&) noexcept = default;
  Rows& operator=(Rows&&) noexcept = default;

  std::size_t size() const noexcept { return rows_.size(); }
  bool empty() const noexcept { return rows_.empty(); }
  bool is_null(std::size_t row, std::size_t column) const;
  std::string_view text(std::size_t row, std::size_t column) const;
  std::int64_t int64(std::size_t row, std::size_t column) const;  // NULL reads as 0
  std::optional<std::int64_t> optional_int64(std::size_t row, std::size_t column) const;
  std::optional<std::string> optional_text(std::size_t row, std::size_t column) const;

 private:
  struct Free {
    void operator()(MYSQL_RES* result) const noexcept { mysql_free_result(result); }
  };
  std::unique_ptr<MYSQL_RES, Free> result_;
  struct Cell {
    const char* data;  // nullptr: NULL
    std::size_t size;
  };
  std::vector<std::vector<Cell>> rows_;
};

class Connection {
 public:
  // Connects and sets the session up. kUnavailable (with the redacted URL and the server's
  // reason) when the server cannot be reached or refuses the login.
  static Result<std::unique_ptr<Connection>> open(const Settings& settings);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  MYSQL* handle() const noexcept { return handle_; }

  // Runs one statement (or, with multi = true, a script of several); returns its rows (none
  // for a statement without a result).
  Result<Rows> query(std::string_view sql, bool multi = false);
  // The statement Q (an EmbedSql struct) with `params`.
  template <class Q>
  Result<Rows> run(const Params& params) {
    return query(params.render(Q::text, Q::positions));
  }
  template <class Q>
  Params params() {
    return Params(handle_, Q::param_count);
  }

  // Of the last statement: rows it matched (CLIENT_FOUND_ROWS), the id it inserted.
  std::uint64_t affected_rows() const noexcept;
  std::uint64_t insert_id() const noexcept;
  // The MariaDB error number of the last failure (0: none).
  unsigned last_errno() const noexcept { return last_errno_; }
  // The connection is gone (lost, or the server went away) and must not be reused.
  bool broken() const noexcept { return broken_; }

 private:
  explicit Connection(MYSQL* handle) : handle_(handle) {}
  Error error(std::string_view what);

  MYSQL* handle_;
  unsigned last_errno_ = 0;
  bool broken_ = false;
};

// ER_LOCK_DEADLOCK (1213) and ER_LOCK_WAIT_TIMEOUT (1205): the transaction is retried.
bool is_retryable_lock_error(unsigned error_number) noexcept;

}  // namespace readpast::detail::mariadb
