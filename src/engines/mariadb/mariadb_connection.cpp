#include "engines/mariadb/mariadb_connection.hpp"

#include <errmsg.h>
#include <mysqld_error.h>

#include <charconv>
#include <cstdio>
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
  at(n) = std::to_string(value);
  return *this;
}

Params& Params::set(int n, double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  std::string text(buffer, ec == std::errc() ? end : buffer);
  // A double literal: 1e3, not the DECIMAL 1000 (whose precision is limited).
  if (text.find('e') == std::string::npos) text += "e0";
  at(n) = std::move(text);
  return *this;
}

Params& Params::set(int n, std::string_view text) {
  std::string literal(text.size() * 2 + 3, '\0');
  literal[0] = '\'';
  const unsigned long length =
      mysql_real_escape_string(handle_, literal.data() + 1, text.data(), text.size());
  literal.resize(length + 1);
  literal += '\'';
  at(n) = std::move(literal);
  return *this;
}

Params& Params::set_bytes(int n, std::string_view bytes) {
  // _binary: the bytes are not checked against the connection's character set.
  std::string literal(bytes.size() * 2 + 10, '\0');
  constexpr std::string_view kPrefix = "_binary'";
  literal.replace(0, kPrefix.size(), kPrefix);
  const unsigned long length = mysql_real_escape_string(handle_, literal.data() + kPrefix.size(),
                                                        bytes.data(), bytes.size());
  literal.resize(kPrefix.size() + length);
  literal += '\'';
  at(n) = std::move(literal);
  return *this;
}

Params& Params::set_null(int n) {
  at(n) = "NULL";
  return *this;
}

Params& Params::set_raw(int n, std::string_view sql) {
  at(n) = "(" + std::string(sql) + ")";
  return *this;
}

std::string Params::render(std::string_view text, std::span<const int> positions) const {
  std::size_t extra = 0;
  for (int p : positions) extra += literals_.at(static_cast<std::size_t>(p - 1)).size();
  std::string out;
  out.reserve(text.size() + extra);
  std::size_t next = 0;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote) quote = 0;
      out += c;
    } else if (c == '\'' || c == '"' || c == '`') {
      quote = c;
      out += c;
    } else if (c == '?') {
      if (next >= positions.size()) throw std::logic_error("more '?' than parameters");
      const std::string& literal = literals_.at(static_cast<std::size_t>(positions[next++] - 1));
      if (literal.empty()) throw std::logic_error("a statement parameter was not set");
      out += literal;
    } else {
      out += c;
    }
  }
  return out;
}

// ---- Rows

Rows::Rows(MYSQL_RES* result) : result_(result) {
  if (result == nullptr) return;
  const unsigned columns = mysql_num_fields(result);
  rows_.reserve(mysql_num_rows(result));
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    const unsigned long* lengths = mysql_fetch_lengths(result);
    std::vector<Cell> cells(columns);
    for (unsigned i = 0; i < columns; ++i) cells[i] = {row[i], lengths[i]};
    rows_.push_back(std::move(cells));
  }
}

bool Rows::is_null(std::size_t row, std::size_t column) const {
  return rows_.at(row).at(column).data == nullptr;
}

std::string_view Rows::text(std::size_t row, std::size_t column) const {
  const Cell& cell = rows_.at(row).at(column);
  if (cell.data == nullptr) return {};
  return {cell.data, cell.size};
}

std::int64_t Rows::int64(std::size_t row, std::size_t column) const {
  return optional_int64(row, column).value_or(0);
}

std::optional<std::int64_t> Rows::optional_int64(std::size_t row, std::size_t column) const {
  const Cell& cell = rows_.at(row).at(column);
  if (cell.data == nullptr) return std::nullopt;
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(cell.data, cell.data + cell.size, value);
  if (ec != std::errc()) {
    // A DECIMAL ("12.000000"): its whole part.
    double d = 0;
    std::from_chars(cell.data, cell.data + cell.size, d);
    return static_cast<std::int64_t>(d);
  }
  return value;
}

std::optional<std::string> Rows::optional_text(std::size_t row, std::size_t column) const {
  const Cell& cell = rows_.at(row).at(column);
  if (cell.data == nullptr) return std::nullopt;
  return std::string(cell.data, cell.size);
}

// ---- Connection

Result<std::unique_ptr<Connection>> Connection::open(const Settings& settings) {
  MYSQL* handle = mysql_init(nullptr);
  if (handle == nullptr) return fail_with(Error::internal("mysql_init: out of memory"));
  std::unique_ptr<Connection> connection(new Connection(handle));
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
  return connection;
}

Connection::~Connection() {
  mysql_close(handle_);
}

Error Connection::error(std::string_view what) {
  last_errno_ = mysql_errno(handle_);
  std::string message = "mariadb: " + one_line(mysql_error(handle_));
  (void)what;
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
  if (multi) mysql_set_server_option(handle_, MYSQL_OPTION_MULTI_STATEMENTS_ON);
  const int rc = mysql_real_query(handle_, sql.data(), sql.size());
  if (rc != 0) {
    Error e = error(sql);
    if (multi) broken_ = true;  // a script cut short: the connection is not reused
    return fail_with(std::move(e));
  }
  Rows rows(mysql_store_result(handle_));
  if (mysql_field_count(handle_) != 0 && mysql_errno(handle_) != 0) return fail_with(error(sql));
  if (multi) {
    // Every statement of the script, stopping at the first that fails.
    while (true) {
      const int next = mysql_next_result(handle_);
      if (next < 0) break;
      if (next > 0) {
        Error e = error(sql);
        broken_ = true;  // a script cut short: the connection is not reused
        return fail_with(std::move(e));
      }
      Rows ignored(mysql_store_result(handle_));
    }
    mysql_set_server_option(handle_, MYSQL_OPTION_MULTI_STATEMENTS_OFF);
  }
  return rows;
}

std::uint64_t Connection::affected_rows() const noexcept {
  return mysql_affected_rows(handle_);
}

std::uint64_t Connection::insert_id() const noexcept {
  return mysql_insert_id(handle_);
}

}  // namespace readpast::detail::mariadb
