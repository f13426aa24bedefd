#include "engines/postgres/pg_connection.hpp"

#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>

namespace readpast::detail::pg {
namespace {

struct ConninfoOptionsDeleter {
  void operator()(PQconninfoOption* options) const noexcept { PQconninfoFree(options); }
};

struct FreeMem {
  void operator()(void* p) const noexcept { PQfreemem(p); }
};

bool starts_with(const char* text, std::string_view prefix) {
  return text != nullptr && std::string_view(text).starts_with(prefix);
}

bool is_sqlstate(const char* state, std::initializer_list<std::string_view> codes) {
  if (state == nullptr) return false;
  for (auto code : codes) {
    if (code == state) return true;
  }
  return false;
}

void discard_notice(void*, const char*) {}

// "5432" or "5432,5433" (an empty entry means the default port).
bool is_port_list(std::string_view ports) {
  while (true) {
    auto comma = ports.find(',');
    auto item = ports.substr(0, comma);
    if (!item.empty()) {
      unsigned port = 0;
      auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), port);
      if (ec != std::errc() || end != item.data() + item.size() || port < 1 || port > 65535) {
        return false;
      }
    }
    if (comma == std::string_view::npos) return true;
    ports.remove_prefix(comma + 1);
  }
}

}  // namespace

std::string clean_message(std::string_view text, const std::vector<std::string>& secrets) {
  std::string out(text);
  for (const auto& secret : secrets) {
    if (secret.empty()) continue;
    for (auto at = out.find(secret); at != std::string::npos; at = out.find(secret, at + 3)) {
      out.replace(at, secret.size(), "***");
    }
  }
  // libpq's messages span lines ("...failed: Connection refused\n\tIs the server
  // running...?\n"): fold every run of whitespace into one space.
  std::string folded;
  bool space = false;
  for (char c : out) {
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = true;
      continue;
    }
    if (space && !folded.empty()) folded += ' ';
    space = false;
    folded += c;
  }
  return folded;
}

Result<ConnectionConfig> make_connection_config(const DatabaseUrl& url) {
  ConnectionConfig config;
  config.conninfo = url.location;
  config.redacted = url.redacted;
  // Every password as written (possibly percent-encoded) and as libpq reads it, so that
  // it is scrubbed even from messages that echo the URI itself.
  config.secrets = url_passwords(config.conninfo);
  char* error = nullptr;
  std::unique_ptr<PQconninfoOption, ConninfoOptionsDeleter> options(
      PQconninfoParse(config.conninfo.c_str(), &error));
  std::unique_ptr<char, FreeMem> error_owner(error);
  if (!options) {
    // libpq may quote the offending part of the string: show its words only when the
    // string holds no password at all.
    const bool has_password = redact_url(config.conninfo) != config.conninfo;
    std::string why =
        (error != nullptr && !has_password)
            ? clean_message(error, config.secrets)
            : std::string(
                  "libpq cannot parse it (its reason may quote the password, so it is not shown)");
    return fail_with(Error::invalid_argument("bad URL '" + config.redacted + "': " + why));
  }
  if (auto it = url.params.find("reply_timeout"); it != url.params.end()) {
    auto timeout = parse_duration(it->second);
    if (!timeout || *timeout <= Duration::zero()) {
      return fail_with(Error::invalid_argument(
          "bad URL '" + config.redacted +
          "': reply_timeout must be a duration of more than zero (e.g. 30s, 5m)"));
    }
    config.reply_timeout = *timeout;
  }
  if (auto it = url.params.find("pool_mode"); it != url.params.end()) {
    if (it->second != "session" && it->second != "transaction") {
      return fail_with(Error::invalid_argument(
          "bad URL '" + config.redacted +
          "': pool_mode must be session (the default: a direct connection or a pooler in "
          "session mode) or transaction (a pooler such as PgBouncer in transaction mode)"));
    }
    config.prepare = it->second == "session";
  }
  for (PQconninfoOption* o = options.get(); o->keyword != nullptr; ++o) {
    if (o->val == nullptr || *o->val == '\0') continue;
    if (std::strcmp(o->keyword, "password") == 0) config.secrets.emplace_back(o->val);
    // libpq checks most values only when it connects, and its complaint would then read
    // like an unreachable server. A port that is not a number is the common typo: call it
    // a bad URL here. (Several hosts take a comma-separated list of ports.)
    if (std::strcmp(o->keyword, "port") == 0 && !is_port_list(o->val)) {
      return fail_with(Error::invalid_argument("bad URL '" + config.redacted +
                                               "': the port must be a number from 1 to 65535"));
    }
  }
  return config;
}

Connection::Connection(Key, PGconn* conn, bool owned, std::vector<std::string> secrets,
                       Duration reply_timeout, bool prepare)
    : conn_(conn, Closer{owned}),
      prepare_(owned && prepare),
      secrets_(std::move(secrets)),
      reply_timeout_(reply_timeout) {}

Result<std::unique_ptr<Connection>> Connection::open(const ConnectionConfig& config) {
  // libpq applies keywords in order, the last occurrence winning, and expands "dbname"
  // (the user's URI or keyword string) where it stands: the defaults before it can be
  // overridden by the URL; client_encoding after it cannot, because binary text
  // parameters are sent as UTF-8.
  const std::array<const char*, 10> keywords = {"keepalives",
                                                "keepalives_idle",
                                                "keepalives_interval",
                                                "keepalives_count",
                                                "tcp_user_timeout",
                                                "connect_timeout",
                                                "fallback_application_name",
                                                "dbname",
                                                "client_encoding",
                                                nullptr};
  const std::array<const char*, 10> values = {
      "1", "30", "10", "3", "60000", "10", "readpast", config.conninfo.c_str(), "UTF8", nullptr};
  PGconn* raw = PQconnectdbParams(keywords.data(), values.data(), /*expand_dbname=*/1);
  if (raw == nullptr)
    return fail_with(Error::unavailable("cannot connect to PostgreSQL: out of memory"));
  auto connection = std::make_unique<Connection>(Key{}, raw, true, config.secrets,
                                                 config.reply_timeout, config.prepare);
  if (PQstatus(raw) != CONNECTION_OK) {
    return fail_with(
        Error::unavailable("cannot connect to PostgreSQL at '" + config.redacted +
                           "': " + clean_message(PQerrorMessage(raw), config.secrets)));
  }
  PQsetNoticeProcessor(raw, discard_notice, nullptr);
  // Non-blocking, so that no send or receive can outlast reply_timeout (round_trip()).
  if (PQsetnonblocking(raw, 1) != 0) {
    return fail_with(Error::internal("cannot make the PostgreSQL connection non-blocking"));
  }
  // gen_random_uuid() is built in from 13 on; binary timestamps need integer datetimes
  // (the only choice since 10).
  if (PQserverVersion(raw) < 130000) {
    return fail_with(Error::internal("readpast needs PostgreSQL 13 or newer; the server at '" +
                                     config.redacted + "' is version " +
                                     std::to_string(PQserverVersion(raw) / 10000)));
  }
  if (!starts_with(PQparameterStatus(raw, "integer_datetimes"), "on")) {
    return fail_with(Error::internal("the PostgreSQL server does not use integer datetimes"));
  }
  return connection;
}

Connection Connection::borrow(PGconn* conn) {
  return Connection(Key{}, conn, false, {});
}

Error Connection::error_from(const PGresult* result) {
  const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary = result ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string message =
      clean_message(primary != nullptr ? primary : PQerrorMessage(conn_.get()), secrets_);
  if (message.empty()) message = "unknown error";

  // No SQLSTATE means libpq itself failed: the connection is gone.
  if (PQstatus(conn_.get()) == CONNECTION_BAD || state == nullptr) {
    broken_ = true;
    return Error::unavailable("lost the connection to PostgreSQL: " + message);
  }
  // A read-only server: after a fail-over this session still points at the old primary,
  // now a standby. Dropping the connection lets the next one find the new primary (with
  // several hosts and target_session_attrs=read-write).
  if (is_sqlstate(state, {"25006"})) {
    broken_ = true;
    return Error::unavailable("PostgreSQL is read-only here (a standby?): " + message);
  }
  if (starts_with(state, "08") || starts_with(state, "53") ||
      is_sqlstate(state, {"57P01", "57P02", "57P03"})) {
    broken_ = broken_ || starts_with(state, "08") || starts_with(state, "57P");
    return Error::unavailable("PostgreSQL is unavailable: " + message);
  }
  if (is_sqlstate(state, {"40001", "40P01", "55P03", "57014"})) {
    return Error::unavailable("PostgreSQL is busy: " + message);
  }
  if (is_sqlstate(state, {"42P01", "3F000", "42883"})) {
    return Error::schema("the database has no readpast schema; run `readpast init` (" + message +
                         ")");
  }
  if (is_sqlstate(state, {"23505"})) return Error::conflict(message);
  // Text the database cannot store (22021, 22P05), and a time or duration beyond its
  // range (22008: a delay of Duration::max(), a run_at in the year 300000; 22003).
  if (is_sqlstate(state, {"22021", "22P05", "22008", "22003"})) {
    return Error::invalid_argument(message);
  }
  return Error::internal("PostgreSQL: " + message);
}

Error Connection::give_up() {
  broken_ = true;
  return Error::unavailable("no reply from PostgreSQL within " + format_duration(reply_timeout_) +
                            ": the connection is given up as dead (reply_timeout)");
}

Result<ResultPtr> Connection::round_trip(const std::function<int(PGconn*)>& send,
                                         const std::function<PGresult*(PGconn*)>& sync) {
  PGconn* conn = conn_.get();
  if (!prepare_) return ResultPtr(sync(conn));
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + reply_timeout_;
  // Waits until the socket is ready for `events`; false once the deadline has passed.
  auto wait_for = [&](short events) {
    while (true) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd fd{PQsocket(conn), events, 0};
      const int rc = ::poll(&fd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 60'000)));
      if (rc > 0 || (rc < 0 && errno != EINTR)) return true;  // libpq reports any error
    }
  };
  if (send(conn) == 0) return fail_with(error_from(nullptr));
  // Send all of it (a big batch may not fit the socket's buffer at once).
  while (true) {
    const int flushed = PQflush(conn);
    if (flushed < 0) return fail_with(error_from(nullptr));
    if (flushed == 0) break;
    if (!wait_for(POLLIN | POLLOUT)) return fail_with(give_up());
    if (PQconsumeInput(conn) == 0) return fail_with(error_from(nullptr));
  }
  ResultPtr last;
  while (true) {
    while (PQisBusy(conn) == 0) {
      ResultPtr next(PQgetResult(conn));
      if (!next) return last;
      // The first error stays: the statements after it did not run (as with PQexec).
      if (!last || PQresultStatus(last.get()) != PGRES_FATAL_ERROR) last = std::move(next);
    }
    if (!wait_for(POLLIN)) return fail_with(give_up());
    if (PQconsumeInput(conn) == 0) return fail_with(error_from(nullptr));
  }
}

Result<Rows> Connection::run(const Statement& statement, const Params& params,
                             std::string& sqlstate) {
  auto failed = [&](const PGresult* result) {
    const char* state = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
    sqlstate = state != nullptr ? state : "";
    return fail_with(error_from(result));
  };
  // Named (prepared once, plan cached) unless the statement asks to be planned each call.
  const bool named = prepare_ && statement.prepared;
  if (named && !prepared_.contains(statement.name)) {
    auto prepared = round_trip(
        [&](PGconn* c) {
          return PQsendPrepare(c, statement.name.c_str(), statement.sql.c_str(), 0, nullptr);
        },
        [&](PGconn* c) {
          return PQprepare(c, statement.name.c_str(), statement.sql.c_str(), 0, nullptr);
        });
    if (!prepared) {
      sqlstate.clear();
      return fail_with(prepared.error());
    }
    if (!*prepared || PQresultStatus(prepared->get()) != PGRES_COMMAND_OK) {
      return failed(prepared->get());
    }
    prepared_.insert(statement.name);
  }
  auto result = round_trip(
      [&](PGconn* c) {
        if (!named) {
          return PQsendQueryParams(c, statement.sql.c_str(), params.size(), nullptr,
                                   params.values(), params.lengths(), params.formats(),
                                   /*resultFormat=*/1);
        }
        return PQsendQueryPrepared(c, statement.name.c_str(), params.size(), params.values(),
                                   params.lengths(), params.formats(), /*resultFormat=*/1);
      },
      [&](PGconn* c) {
        return PQexecParams(c, statement.sql.c_str(), params.size(), nullptr, params.values(),
                            params.lengths(), params.formats(), /*resultFormat=*/1);
      });
  if (!result) {
    sqlstate.clear();
    return fail_with(result.error());
  }
  const auto status = *result ? PQresultStatus(result->get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) return Rows(std::move(*result));
  return failed(result->get());
}

Result<Rows> Connection::exec(const Statement& statement, const Params& params) {
  if (params.size() != statement.param_count || params.first_unbound() != 0) {
    return fail_with(Error::internal(statement.name + ": takes " +
                                     std::to_string(statement.param_count) + " parameters, given " +
                                     std::to_string(params.size()) + " with $" +
                                     std::to_string(params.first_unbound()) + " unbound"));
  }
  if (broken_) return fail_with(Error::unavailable("lost the connection to PostgreSQL"));
  std::string sqlstate;
  auto rows = run(statement, params, sqlstate);
  if (rows || !prepare_ || broken_) return rows;
  // 42P05: our statement name is taken in a session we never prepared it on. Only a pooler
  // that shares server sessions between clients (transaction mode) does that; retrying
  // cannot help, the URL must say so.
  if (sqlstate == "42P05") {
    return fail_with(Error::invalid_argument(
        "this PostgreSQL connection shares its server session with other clients (a pooler "
        "such as PgBouncer in transaction mode?): add pool_mode=transaction to the URL (" +
        rows.error().message + ")"));
  }
  // The session lost a statement we prepared (26000: a pooler moved us to another server
  // session), or a schema change altered its result type (0A000, "cached plan must not
  // change result type"). Nothing ran: prepare again and retry once — unless a
  // transaction is open, which the error has aborted.
  PGconn* conn = conn_.get();
  if (PQtransactionStatus(conn) != PQTRANS_IDLE || (sqlstate != "26000" && sqlstate != "0A000")) {
    return rows;
  }
  prepared_.erase(statement.name);
  if (sqlstate == "0A000") {
    std::unique_ptr<char, FreeMem> name(
        PQescapeIdentifier(conn, statement.name.c_str(), statement.name.size()));
    if (name) {
      const std::string deallocate = "DEALLOCATE " + std::string(name.get());
      auto done = round_trip([&](PGconn* c) { return PQsendQuery(c, deallocate.c_str()); },
                             [&](PGconn* c) { return PQexec(c, deallocate.c_str()); });
      if (!done) return fail_with(done.error());
    }
  }
  return run(statement, params, sqlstate);
}

Status Connection::exec_script(std::string_view sql) {
  if (broken_) return fail_with(Error::unavailable("lost the connection to PostgreSQL"));
  const std::string text(sql);
  auto result = round_trip([&](PGconn* c) { return PQsendQuery(c, text.c_str()); },
                           [&](PGconn* c) { return PQexec(c, text.c_str()); });
  if (!result) return fail_with(result.error());
  const auto status = *result ? PQresultStatus(result->get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return {};
  return fail_with(error_from(result->get()));
}

bool Connection::ready_for_reuse() {
  PGconn* conn = conn_.get();
  if (broken_ || PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE) {
    return false;
  }
  // An idle pooled session has nothing to receive (it does not LISTEN). Anything readable
  // is the server saying goodbye — a restart or fail-over sends "FATAL: terminating
  // connection ..." and then closes — or an idle_session_timeout doing the same. One read
  // may return the message without noticing the close, so do not try to tell: do not reuse.
  pollfd fd{PQsocket(conn), POLLIN, 0};
  return ::poll(&fd, 1, 0) == 0;
}

Result<Transaction> Transaction::begin(Connection& connection) {
  if (auto ok = connection.exec_script("BEGIN"); !ok) return fail_with(ok.error());
  return Transaction(connection);
}

Status Transaction::commit() {
  Connection* connection = std::exchange(connection_, nullptr);
  if (connection == nullptr) return fail_with(Error::internal("transaction already finished"));
  return connection->exec_script("COMMIT");
}

Transaction::~Transaction() {
  // A failed ROLLBACK leaves the session in a transaction; the pool then discards it
  // (ready_for_reuse() is false), so ignoring the result here is safe.
  if (connection_ != nullptr && !connection_->broken()) {
    (void)connection_->exec_script("ROLLBACK");
  }
}

}  // namespace readpast::detail::pg
