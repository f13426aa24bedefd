// engines/postgres/pg_connection.hpp — a small RAII layer over libpq: one connection, its
// prepared statements, and transactions that roll back unless committed.
//
// Errors: every failure becomes a readpast::Error whose message is one line and never
// contains the password (ConnectionConfig::secrets are scrubbed from libpq's text, and only
// DatabaseUrl::redacted is ever printed). A lost connection, a server shutting down or
// refusing connections, a serialization failure or deadlock, a read-only server (after a
// fail-over), no reply within ConnectionConfig::reply_timeout → kUnavailable: the operation
// may be retried (its outcome is unknown when the reply was lost). Missing schema objects →
// kSchema. A unique violation → kConflict. Text it cannot store, or a time or duration
// out of its range → kInvalidArgument. Anything else the server reports → kInternal.
//
// Thread-safety: a Connection is used by one thread at a time (the pool lends it out).
#pragma once

#include <libpq-fe.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/url.hpp"
#include "engines/postgres/pg_values.hpp"
#include "engines/postgres/postgres_sql.hpp"
#include "readpast/error.hpp"
#include "readpast/time.hpp"

namespace readpast::detail::pg {

// How long a statement may wait for the server's reply (URL parameter reply_timeout).
inline constexpr Duration kDefaultReplyTimeout = std::chrono::minutes(5);

// How to reach the server, and what never to print.
struct ConnectionConfig {
  std::string conninfo;              // libpq URI or keywords; may hold a password: never print it
  std::string redacted;              // the printable form of the URL
  std::vector<std::string> secrets;  // the password as written and as decoded
  // A connection whose server has not answered a statement within this is given up as dead:
  // TCP keepalive and tcp_user_timeout cannot see a peer that stops answering while its TCP
  // stays up (a hung server or pooler, a proxy that swallows the bytes).
  Duration reply_timeout = kDefaultReplyTimeout;  // Default: 5 minutes
  // Named prepared statements, which live in the server session. False behind a pooler in
  // transaction mode (URL parameter pool_mode=transaction), which hands each transaction to
  // any of its server sessions: every statement is then sent with the unnamed statement.
  bool prepare = true;
};

// Checks the connection string with libpq's own parser and collects its secrets.
Result<ConnectionConfig> make_connection_config(const DatabaseUrl& url);

// Removes every secret from `text` and folds it onto one line.
std::string clean_message(std::string_view text, const std::vector<std::string>& secrets);

class Connection {
 public:
  // Connects (blocking, bounded by connect_timeout) with TCP keepalives on, client encoding
  // UTF8 and notices discarded (the library never prints). kUnavailable when it cannot.
  static Result<std::unique_ptr<Connection>> open(const ConnectionConfig& config);
  // Wraps a connection the caller owns (the outbox): never closed here, and statements are
  // not prepared on it, so the caller's own prepared-statement names cannot clash.
  static Connection borrow(PGconn* conn);

  // Use open() or borrow(); the tag keeps the constructor private in effect while letting
  // std::make_unique call it.
  struct Key {
   private:
    friend class Connection;
    Key() = default;
  };
  Connection(Key, PGconn* conn, bool owned, std::vector<std::string> secrets,
             Duration reply_timeout = kDefaultReplyTimeout, bool prepare = true);

  Connection(Connection&&) noexcept = default;
  Connection& operator=(Connection&&) noexcept = default;
  ~Connection() = default;

  // Runs one statement with binary parameters and binary results. On an owned connection
  // the statement is prepared on first use (under Statement::name) and reused after.
  Result<Rows> exec(const Statement& statement, const Params& params);
  // Runs one or more statements with the simple protocol (DDL, BEGIN, COMMIT, LISTEN).
  Status exec_script(std::string_view sql);

  // True when the connection can be lent out again: connected, no transaction open, and
  // nothing received while idle (a restart closes every idle connection, sending a last
  // message first; this notices without a round trip).
  bool ready_for_reuse();
  // True once an operation found the connection lost, or the server read-only.
  bool broken() const noexcept { return broken_; }
  PGconn* raw() const noexcept { return conn_.get(); }

 private:
  struct Closer {
    bool owned = true;
    void operator()(PGconn* conn) const noexcept {
      if (owned) PQfinish(conn);
    }
  };

  // On failure, `sqlstate` receives the server's SQLSTATE (empty when libpq failed).
  Result<Rows> run(const Statement& statement, const Params& params, std::string& sqlstate);
  // One round trip. On an owned connection (non-blocking): `send` (a PQsend* call), then the
  // results, waiting at most reply_timeout_ for the server; the last result comes back (the
  // first error, if any, as PQexec would). A borrowed connection is the caller's: `sync`
  // (the blocking PQexec* call) runs instead. A null result is libpq failing (see error_from).
  Result<ResultPtr> round_trip(const std::function<int(PGconn*)>& send,
                               const std::function<PGresult*(PGconn*)>& sync);
  // Marks the connection broken: no reply within reply_timeout_.
  Error give_up();
  // Maps a failed result (or a missing one) onto readpast::Error; marks the connection
  // broken when it is lost.
  Error error_from(const PGresult* result);

  std::unique_ptr<PGconn, Closer> conn_;
  bool prepare_ = true;
  bool broken_ = false;
  std::vector<std::string> secrets_;
  Duration reply_timeout_;
  std::unordered_set<std::string> prepared_;  // statement names prepared on this session
};

// BEGIN on construction; ROLLBACK on destruction unless commit() succeeded.
class Transaction {
 public:
  static Result<Transaction> begin(Connection& connection);
  Transaction(Transaction&& other) noexcept : connection_(other.connection_) {
    other.connection_ = nullptr;
  }
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();

  Status commit();

 private:
  explicit Transaction(Connection& connection) : connection_(&connection) {}
  Connection* connection_;  // null once committed, rolled back or moved from
};

}  // namespace readpast::detail::pg
