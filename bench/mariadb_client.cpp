#include "mariadb_client.hpp"

#include <charconv>

namespace readpast::bench {
namespace {

std::string percent_decoded(std::string_view text, const std::string& url) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    const char* begin = text.data() + i + 1;
    if (i + 2 >= text.size() || std::from_chars(begin, begin + 2, value, 16).ptr != begin + 2) {
      fail("bad %-encoding in the MariaDB URL '" + url + "'");
    }
    out += static_cast<char>(value);
    i += 2;
  }
  return out;
}

}  // namespace

MdbUrl MdbUrl::parse(const std::string& url) {
  auto bad = [&](const std::string& why) -> MdbUrl {
    fail("bad MariaDB URL '" + url + "': " + why +
         " (mariadb://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?socket=/path])");
  };
  std::string_view rest = url;
  if (rest.starts_with("mariadb://")) {
    rest.remove_prefix(10);
  } else if (rest.starts_with("mysql://")) {
    rest.remove_prefix(8);
  } else {
    return bad("not mariadb://");
  }
  MdbUrl out;
  if (const auto question = rest.find('?'); question != std::string_view::npos) {
    std::string_view query = rest.substr(question + 1);
    rest = rest.substr(0, question);
    if (!query.starts_with("socket=") || query.find('&') != std::string_view::npos) {
      return bad("the only parameter taken here is socket=");
    }
    out.socket = percent_decoded(query.substr(7), url);
  }
  const auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash + 1 == rest.size()) return bad("no database");
  out.database = percent_decoded(rest.substr(slash + 1), url);
  std::string_view authority = rest.substr(0, slash);
  const auto at = authority.rfind('@');
  if (at == std::string_view::npos || at == 0) return bad("no user");
  std::string_view userinfo = authority.substr(0, at);
  authority.remove_prefix(at + 1);
  if (const auto colon = userinfo.find(':'); colon != std::string_view::npos) {
    out.password = percent_decoded(userinfo.substr(colon + 1), url);
    userinfo = userinfo.substr(0, colon);
  }
  out.user = percent_decoded(userinfo, url);
  if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
    const std::string_view port = authority.substr(colon + 1);
    if (std::from_chars(port.data(), port.data() + port.size(), out.port).ptr !=
            port.data() + port.size() ||
        out.port == 0 || out.port > 65535) {
      return bad("bad port");
    }
    authority = authority.substr(0, colon);
  }
  out.host = std::string(authority);
  if (out.host.empty() && out.socket.empty()) return bad("no host");
  return out;
}

// ---- MdbRows

MdbRows::MdbRows(MYSQL_RES* result) : result_(result) {
  if (result == nullptr) return;
  const unsigned columns = mysql_num_fields(result);
  rows_.reserve(mysql_num_rows(result));
  while (MYSQL_ROW row = mysql_fetch_row(result)) {
    const unsigned long* lengths = mysql_fetch_lengths(result);
    std::vector<Cell> cells(columns);
    for (unsigned i = 0; i < columns; ++i) cells[i] = Cell{row[i], lengths[i]};
    rows_.push_back(std::move(cells));
  }
}

std::string_view MdbRows::text(std::size_t row, std::size_t col) const {
  const Cell& cell = rows_.at(row).at(col);
  return cell.data == nullptr ? std::string_view() : std::string_view(cell.data, cell.size);
}

std::int64_t MdbRows::int64(std::size_t row, std::size_t col) const {
  const std::string_view value = text(row, col);
  std::int64_t out = 0;
  std::from_chars(value.data(), value.data() + value.size(), out);
  return out;
}

// ---- MdbConn

MdbConn::MdbConn(const MdbUrl& url) : handle_(mysql_init(nullptr)) {
  if (!handle_) fail("mysql_init: out of memory");
  MYSQL* h = handle_.get();
  const unsigned connect_timeout = 10;
  mysql_options(h, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_options(h, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const unsigned long max_packet = 1UL << 30;
  mysql_optionsv(h, MYSQL_OPT_MAX_ALLOWED_PACKET, &max_packet);
  // UTC (times are compared within the server only, but a fixed zone has no DST jumps);
  // READ COMMITTED, as readpast's sessions: no gap locks, so that enqueues and leases never
  // wait for each other's ranges.
  mysql_options(h, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00', tx_isolation = 'READ-COMMITTED'");
  const bool socket = !url.socket.empty();
  if (mysql_real_connect(h, socket ? nullptr : url.host.c_str(), url.user.c_str(),
                         url.password ? url.password->c_str() : nullptr, url.database.c_str(),
                         socket ? 0 : url.port, socket ? url.socket.c_str() : nullptr,
                         CLIENT_MULTI_STATEMENTS) == nullptr) {
    fail("cannot connect to MariaDB at " + (socket ? url.socket : url.host) + ": " +
         mysql_error(h));
  }
}

void MdbConn::fail_here(std::string_view sql) const {
  const unsigned code = mysql_errno(handle_.get());
  throw MdbError("MariaDB: " + std::string(sql.substr(0, 200)) + ": " + mysql_error(handle_.get()) +
                     " (" + std::to_string(code) + ")",
                 code);
}

MdbRows MdbConn::query(std::string_view sql) {
  MYSQL* h = handle_.get();
  if (mysql_real_query(h, sql.data(), sql.size()) != 0) fail_here(sql);
  MdbRows last;
  while (true) {
    if (MYSQL_RES* result = mysql_store_result(h)) {
      last = MdbRows(result);
    } else if (mysql_field_count(h) != 0) {
      fail_here(sql);
    }
    const int next = mysql_next_result(h);
    if (next < 0) break;           // no more results
    if (next > 0) fail_here(sql);  // a later statement failed (the rest were not run)
  }
  return last;
}

std::string MdbConn::scalar(std::string_view sql) {
  const MdbRows rows = query(sql);
  return rows.empty() ? std::string() : std::string(rows.text(0, 0));
}

std::int64_t MdbConn::scalar_int(std::string_view sql) {
  const MdbRows rows = query(sql);
  return rows.empty() ? 0 : rows.int64(0, 0);
}

std::string MdbConn::bytes_literal(std::string_view bytes) const {
  constexpr std::string_view kPrefix = "_binary'";
  std::string out(kPrefix.size() + bytes.size() * 2 + 2, '\0');
  out.replace(0, kPrefix.size(), kPrefix);
  const unsigned long n = mysql_real_escape_string(handle_.get(), out.data() + kPrefix.size(),
                                                   bytes.data(), bytes.size());
  out.resize(kPrefix.size() + n);
  out += '\'';
  return out;
}

// ---- MdbStmt

MdbStmt::MdbStmt(MdbConn& conn, std::string_view sql)
    : stmt_(mysql_stmt_init(conn.raw())), sql_(sql) {
  if (stmt_ == nullptr) fail("mysql_stmt_init: out of memory");
  if (mysql_stmt_prepare(stmt_, sql_.data(), sql_.size()) != 0) fail_here("prepare");
  params_ = static_cast<unsigned>(mysql_stmt_param_count(stmt_));
}

MdbStmt::~MdbStmt() {
  mysql_stmt_close(stmt_);
}

void MdbStmt::fail_here(std::string_view what) const {
  const unsigned code = mysql_stmt_errno(stmt_);
  throw MdbError("MariaDB: " + std::string(what) + " " + sql_.substr(0, 200) + ": " +
                     mysql_stmt_error(stmt_) + " (" + std::to_string(code) + ")",
                 code);
}

std::uint64_t MdbStmt::execute(std::span<const std::string_view> params) {
  if (params.size() != params_) fail("MdbStmt: wrong number of parameters for " + sql_);
  std::vector<MYSQL_BIND> binds(params.size());
  std::vector<unsigned long> lengths(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    lengths[i] = params[i].size();
    binds[i].buffer_type = MYSQL_TYPE_BLOB;  // bytes as they are, no character set
    binds[i].buffer = const_cast<char*>(params[i].data());
    binds[i].buffer_length = lengths[i];
    binds[i].length = &lengths[i];
  }
  unsigned int rows = 0;  // no array binding
  mysql_stmt_attr_set(stmt_, STMT_ATTR_ARRAY_SIZE, &rows);
  if (mysql_stmt_bind_param(stmt_, binds.data()) != 0) fail_here("bind");
  if (mysql_stmt_execute(stmt_) != 0) fail_here("execute");
  return mysql_stmt_affected_rows(stmt_);
}

std::uint64_t MdbStmt::execute_bulk(std::span<const std::vector<std::string_view>> columns) {
  if (columns.size() != params_) fail("MdbStmt: wrong number of parameters for " + sql_);
  if (columns.empty() || columns[0].empty()) return 0;
  const std::size_t n = columns[0].size();
  std::vector<MYSQL_BIND> binds(columns.size());
  std::vector<std::vector<const char*>> pointers(columns.size());
  std::vector<std::vector<unsigned long>> lengths(columns.size());
  for (std::size_t p = 0; p < columns.size(); ++p) {
    if (columns[p].size() != n) fail("MdbStmt: columns of different lengths");
    pointers[p].reserve(n);
    lengths[p].reserve(n);
    for (const std::string_view value : columns[p]) {
      pointers[p].push_back(value.data());
      lengths[p].push_back(value.size());
    }
    // Column-wise array binding: for a variable-length type, buffer is an array of
    // pointers and length an array of lengths, one per row.
    binds[p].buffer_type = MYSQL_TYPE_BLOB;
    binds[p].buffer = pointers[p].data();
    binds[p].length = lengths[p].data();
  }
  unsigned int rows = static_cast<unsigned int>(n);
  if (mysql_stmt_attr_set(stmt_, STMT_ATTR_ARRAY_SIZE, &rows) != 0) fail_here("array size");
  if (mysql_stmt_bind_param(stmt_, binds.data()) != 0) fail_here("bind");
  if (mysql_stmt_execute(stmt_) != 0) fail_here("bulk execute");
  return mysql_stmt_affected_rows(stmt_);
}

}  // namespace readpast::bench
