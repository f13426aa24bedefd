#include "engines/mariadb/mariadb_connection.hpp"

#include <errmsg.h>
#include <mysqld_error.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <stdexcept>

namespace readpast::detail::mariadb {
namespace {

// Client-side errors that mean the server is not there (any more) for this connection.
bool is_connection_error(unsigned error_number) noexcept {
  switch (error_number) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_UNKNOWN_HOST:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case CR_SERVER_LOST_EXTENDED:
    case CR_SERVER_HANDSHAKE_ERR:
    case CR_COMMANDS_OUT_OF_SYNC:
    case ER_CONNECTION_KILLED:
    case ER_SERVER_SHUTDOWN:
    case ER_NET_READ_ERROR:
    case ER_NET_READ_INTERRUPTED:
    case ER_NET_ERROR_ON_WRITE:
    case ER_NET_WRITE_INTERRUPTED:
      return true;
    default:
      return false;
  }
}

// One line: MariaDB's messages may span lines (a CHECK's text, a quoted statement).
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

bool is_retryable_lock_error(unsigned error_number) noexcept {
  return error_number == ER_LOCK_DEADLOCK || error_number == ER_LOCK_WAIT_TIMEOUT;
}

// ---- Params

Params& Params::set(int n, std::int64_t value) {
  at(n) = value;
  return *this;
}

Params& Params::set(int n, double value) {
  at(n) = value;
  return *this;
}

Params& Params::set(int n, std::string_view text) {
  at(n) = Text{std::string(text)};
  return *this;
}

Params& Params::set_bytes(int n, std::string_view bytes) {
  at(n) = Bytes{std::string(bytes)};
  return *this;
}

Params& Params::set_null(int n) {
  at(n) = Null{};
  return *this;
}

// ---- Rows

Rows::Rows(MYSQL_RES* result) {
  if (result == nullptr) return;
  const std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> owned(result, mysql_free_result);
  columns_ = mysql_num_fields(result);
  cells_.reserve(mysql_num_rows(result) * columns_);
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    const unsigned long* lengths = mysql_fetch_lengths(result);
    for (std::size_t i = 0; i < columns_; ++i) {
      if (row[i] == nullptr) {
        cells_.emplace_back();
      } else {
        cells_.emplace_back(std::in_place, row[i], lengths[i]);
      }
    }
  }
}

const std::optional<std::string>& Rows::cell(std::size_t row, std::size_t column) const {
  if (column >= columns_) throw std::out_of_range("Rows: no such column");
  return cells_.at(row * columns_ + column);
}

bool Rows::is_null(std::size_t row, std::size_t column) const {
  return !cell(row, column).has_value();
}

std::string_view Rows::text(std::size_t row, std::size_t column) const {
  const auto& value = cell(row, column);
  if (!value) return {};
  return *value;
}

std::int64_t Rows::int64(std::size_t row, std::size_t column) const {
  return optional_int64(row, column).value_or(0);
}

std::optional<std::int64_t> Rows::optional_int64(std::size_t row, std::size_t column) const {
  const auto& value = cell(row, column);
  if (!value) return std::nullopt;
  const char* begin = value->data();
  const char* end = begin + value->size();
  std::int64_t number = 0;
  auto [stop, ec] = std::from_chars(begin, end, number);
  if (ec != std::errc()) {
    // A DECIMAL ("12.000000"): its whole part.
    double d = 0;
    std::from_chars(begin, end, d);
    return static_cast<std::int64_t>(d);
  }
  return number;
}

std::optional<std::string> Rows::optional_text(std::size_t row, std::size_t column) const {
  return cell(row, column);
}

// ---- Connection

Result<std::unique_ptr<Connection>> Connection::open(const Settings& settings) {
  Handle owned(mysql_init(nullptr));
  if (!owned) return fail_with(Error::internal("mysql_init: out of memory"));
  MYSQL* handle = owned.get();
  mysql_options(handle, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_options(handle, MYSQL_OPT_CONNECT_TIMEOUT, &settings.connect_timeout_s);
  mysql_options(handle, MYSQL_OPT_READ_TIMEOUT, &settings.reply_timeout_s);
  mysql_options(handle, MYSQL_OPT_WRITE_TIMEOUT, &settings.reply_timeout_s);
  const unsigned long max_packet = 1UL << 30;
  mysql_optionsv(handle, MYSQL_OPT_MAX_ALLOWED_PACKET, &max_packet);
  // Settings of every session: UTC for NOW(); READ COMMITTED (no gap locks, docs/mariadb.md);
  // strict mode, so that a bad value is an error rather than a warning.
  mysql_options(handle, MYSQL_INIT_COMMAND,
                "SET time_zone = '+00:00', tx_isolation = 'READ-COMMITTED', "
                "sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,NO_ZERO_DATE', "
                "innodb_lock_wait_timeout = 10, autocommit = 1");
  const bool use_socket = !settings.socket.empty();
  if (mysql_real_connect(
          handle, use_socket ? nullptr : settings.host.c_str(), settings.user.c_str(),
          settings.password ? settings.password->c_str() : nullptr, settings.database.c_str(),
          use_socket ? 0 : settings.port, use_socket ? settings.socket.c_str() : nullptr,
          CLIENT_FOUND_ROWS) == nullptr) {
    const unsigned number = mysql_errno(handle);
    std::string message = "cannot connect to " + settings.redacted + ": " +
                          one_line(mysql_error(handle)) + " (" + std::to_string(number) + ")";
    if (number == ER_BAD_DB_ERROR) message += "; create the database first";
    return fail_with(Error::unavailable(std::move(message)));
  }
  return std::make_unique<Connection>(Key{}, std::move(owned));
}

Error Connection::error(unsigned number, const char* text) {
  last_errno_ = number;
  std::string message = "mariadb: " + one_line(text);
  if (is_connection_error(last_errno_)) {
    broken_ = true;
    return Error::unavailable(message);
  }
  switch (last_errno_) {
    case ER_NET_PACKET_TOO_LARGE:
      // The server closes the connection after it; the statement (a payload) was too big for
      // its max_allowed_packet (docs/mariadb.md).
      broken_ = true;
      return Error::invalid_argument(message + "; raise the server's max_allowed_packet");
    case ER_LOCK_DEADLOCK:
    case ER_LOCK_WAIT_TIMEOUT:
    case ER_CON_COUNT_ERROR:
    case ER_TOO_MANY_USER_CONNECTIONS:
    case ER_OPTION_PREVENTS_STATEMENT:  // read-only
      return Error::unavailable(message);
    case ER_NO_SUCH_TABLE:
      return Error::schema(message + "; run `readpast init`");
    case ER_DUP_ENTRY:
      return Error::conflict(message);
    case ER_CONSTRAINT_FAILED:
    case ER_DATA_TOO_LONG:
    case ER_TRUNCATED_WRONG_VALUE_FOR_FIELD:
    case ER_WARN_DATA_OUT_OF_RANGE:
      return Error::invalid_argument(message);
    default:
      return Error::internal(message + " (" + std::to_string(last_errno_) + ")");
  }
}

Result<Rows> Connection::query(std::string_view sql, bool multi) {
  last_errno_ = 0;
  MYSQL* handle = handle_.get();
  if (multi) mysql_set_server_option(handle, MYSQL_OPTION_MULTI_STATEMENTS_ON);
  const int rc = mysql_real_query(handle, sql.data(), sql.size());
  if (rc != 0) {
    Error e = error();
    if (multi) broken_ = true;  // a script cut short: the connection is not reused
    return fail_with(std::move(e));
  }
  Rows rows(mysql_store_result(handle));
  if (mysql_field_count(handle) != 0 && mysql_errno(handle) != 0) return fail_with(error());
  affected_rows_ = mysql_affected_rows(handle);
  insert_id_ = mysql_insert_id(handle);
  if (multi) {
    // Every statement of the script, stopping at the first that fails.
    while (true) {
      const int next = mysql_next_result(handle);
      if (next < 0) break;
      if (next > 0) {
        Error e = error();
        broken_ = true;  // a script cut short: the connection is not reused
        return fail_with(std::move(e));
      }
      Rows ignored(mysql_store_result(handle));
    }
    mysql_set_server_option(handle, MYSQL_OPTION_MULTI_STATEMENTS_OFF);
  }
  return rows;
}

Result<MYSQL_STMT*> Connection::prepared(const char* text) {
  if (auto it = statements_.find(text); it != statements_.end()) return it->second.get();
  Statement statement(mysql_stmt_init(handle_.get()));
  if (!statement) return fail_with(error());
  // Not kept when it fails (a table not created yet): the next use prepares it again.
  if (mysql_stmt_prepare(statement.get(), text, std::strlen(text)) != 0) {
    return fail_with(error(statement.get()));
  }
  return statements_.emplace(text, std::move(statement)).first->second.get();
}

Result<Rows> Connection::execute(const char* text, const Params& params,
                                 std::span<const int> positions) {
  last_errno_ = 0;
  Result<Rows> rows = [&]() -> Result<Rows> {
    auto statement = prepared(text);
    if (!statement) return fail_with(statement.error());
    MYSQL_STMT* s = *statement;
    if (mysql_stmt_param_count(s) != positions.size()) {
      throw std::logic_error("a statement's '?' do not match its parameters");
    }
    // One MYSQL_BIND per '?', in order; a parameter used twice is bound twice. They point
    // into `params`, which outlives the execution; the client only reads them.
    std::vector<MYSQL_BIND> binds(positions.size());
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const Params::Value& value = params.values_.at(static_cast<std::size_t>(positions[i] - 1));
      MYSQL_BIND& bind = binds[i];
      if (std::holds_alternative<Params::Unset>(value)) {
        throw std::logic_error("a statement parameter was not set");
      } else if (std::holds_alternative<Params::Null>(value)) {
        bind.buffer_type = MYSQL_TYPE_NULL;
      } else if (const auto* number = std::get_if<std::int64_t>(&value)) {
        bind.buffer_type = MYSQL_TYPE_LONGLONG;
        bind.buffer = const_cast<std::int64_t*>(number);
      } else if (const auto* real = std::get_if<double>(&value)) {
        bind.buffer_type = MYSQL_TYPE_DOUBLE;
        bind.buffer = const_cast<double*>(real);
      } else {
        // Text in the connection's character set; bytes as a BLOB, which the server takes
        // as a binary string (no character set, any byte).
        const bool is_text = std::holds_alternative<Params::Text>(value);
        const std::string& data =
            is_text ? std::get<Params::Text>(value).value : std::get<Params::Bytes>(value).value;
        bind.buffer_type = is_text ? MYSQL_TYPE_STRING : MYSQL_TYPE_BLOB;
        bind.buffer = const_cast<char*>(data.data());
        bind.buffer_length = data.size();
      }
    }
    if (!binds.empty() && mysql_stmt_bind_param(s, binds.data()) != 0) {
      return fail_with(error(s));
    }
    if (mysql_stmt_execute(s) != 0) return fail_with(error(s));
    return fetch(s);
  }();
  // The server went away: the statements went with it.
  if (!rows && broken_) statements_.clear();
  return rows;
}

Result<Rows> Connection::fetch(MYSQL_STMT* statement) {
  Rows rows;
  rows.columns_ = mysql_stmt_field_count(statement);
  if (rows.columns_ == 0) {
    affected_rows_ = mysql_stmt_affected_rows(statement);
    insert_id_ = mysql_stmt_insert_id(statement);
    return rows;
  }
  // The whole result comes over first (a reply is never left half read), and its buffers
  // (payloads of many MiB) are freed as soon as the rows are copied out.
  struct FreeResult {
    MYSQL_STMT* statement;
    ~FreeResult() { mysql_stmt_free_result(statement); }
  } free_result{statement};
  if (mysql_stmt_store_result(statement) != 0) return fail_with(error(statement));
  affected_rows_ = mysql_stmt_affected_rows(statement);
  insert_id_ = mysql_stmt_insert_id(statement);
  rows.cells_.reserve(mysql_stmt_num_rows(statement) * rows.columns_);

  // Each row is fetched with no buffers, which gives every column's length (as text: a
  // number is converted to its digits) and NULLs; then each value is copied straight into
  // its cell with mysql_stmt_fetch_column, in one piece however long it is.
  std::vector<MYSQL_BIND> probes(rows.columns_);
  std::vector<unsigned long> lengths(rows.columns_);
  std::vector<my_bool> nulls(rows.columns_);
  for (std::size_t i = 0; i < rows.columns_; ++i) {
    probes[i].buffer_type = MYSQL_TYPE_STRING;
    probes[i].length = &lengths[i];
    probes[i].is_null = &nulls[i];
  }
  if (mysql_stmt_bind_result(statement, probes.data()) != 0) return fail_with(error(statement));
  while (true) {
    const int rc = mysql_stmt_fetch(statement);
    if (rc == MYSQL_NO_DATA) break;
    if (rc != 0 && rc != MYSQL_DATA_TRUNCATED) return fail_with(error(statement));
    for (unsigned column = 0; column < rows.columns_; ++column) {
      if (nulls[column]) {
        rows.cells_.emplace_back();
        continue;
      }
      std::string& cell = rows.cells_.emplace_back(std::in_place).value();
      if (lengths[column] == 0) continue;
      cell.resize(lengths[column]);
      MYSQL_BIND bind{};
      unsigned long length = 0;
      bind.buffer_type = MYSQL_TYPE_STRING;
      bind.buffer = cell.data();
      bind.buffer_length = cell.size();
      bind.length = &length;
      if (mysql_stmt_fetch_column(statement, &bind, column, 0) != 0) {
        return fail_with(error(statement));
      }
      cell.resize(std::min<std::size_t>(length, cell.size()));
    }
  }
  return rows;
}

}  // namespace readpast::detail::mariadb
