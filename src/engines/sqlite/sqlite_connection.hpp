// engines/sqlite/sqlite_connection.hpp — RAII over the SQLite C API: a connection with a
// cache of prepared statements, a statement in use, an IMMEDIATE transaction.
//
// Thread-safety: a Connection (and what it hands out) is used by one thread at a time;
// the engine's pool guarantees that. Connections are opened in multi-thread mode
// (SQLITE_OPEN_NOMUTEX) for that reason.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/lease_tokens.hpp"
#include "engines/sqlite/sqlite_checkpoint_pacer.hpp"
#include "readpast/error.hpp"

namespace readpast::detail::sqlite {

struct StatementDeleter {
  void operator()(sqlite3_stmt* stmt) const noexcept { sqlite3_finalize(stmt); }
};
struct DatabaseDeleter {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};

// A cached prepared statement lent out for one execution: reset and unbound when it goes
// out of scope, so the next user finds it clean.
class Statement {
 public:
  Statement(sqlite3_stmt* stmt, sqlite3* db) : stmt_(stmt), db_(db) {}
  ~Statement() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in the SQL text (?1, ?2, ...).
  void bind(int index, std::int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind(int index, int value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind(int index, double value) { sqlite3_bind_double(stmt_, index, value); }
  void bind(int index, std::string_view text) {
    sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8);
  }
  void bind_blob(int index, std::string_view bytes) {
    // A zero-length blob must still be a blob, not NULL: pass a non-null pointer.
    sqlite3_bind_blob64(stmt_, index, bytes.empty() ? "" : bytes.data(), bytes.size(),
                        SQLITE_STATIC);
  }
  void bind_null(int index) { sqlite3_bind_null(stmt_, index); }
  template <class T>
  void bind(int index, const std::optional<T>& value) {
    if (value) {
      bind(index, *value);
    } else {
      bind_null(index);
    }
  }

  // REQUIRES: the bound text and blobs outlive the last step() (they are SQLITE_STATIC).
  // Returns true while a row is available; false when done; an error otherwise.
  Result<bool> step();

  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::int64_t int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string text(int column) const;
  std::string blob(int column) const;
  std::optional<std::int64_t> optional_int64(int column) const;
  std::optional<std::string> optional_text(int column) const;

 private:
  sqlite3_stmt* stmt_;
  sqlite3* db_;
};

class Connection {
 public:
  static constexpr int kDefaultCacheMib = 2;
  // The page size of a database file this open creates: half SQLite's default. A job's
  // enqueue, lease and completion each rewrite whole pages of the table and of three indexes
  // to change a few hundred bytes of them, so smaller pages write fewer bytes to the WAL per
  // job. That keeps the drain's pace when a reader held elsewhere makes the WAL grow instead
  // of restart; 1,024 wrote less still but drained slower without a reader
  // (docs/benchmarks.md, run 45).
  static constexpr int kDefaultPageSize = 2048;
  // What the WAL file is cut back to once it has grown past it and restarted (PRAGMA
  // journal_size_limit, set on every connection that writes).
  static constexpr std::int64_t kWalSizeLimitBytes = 64LL << 20;
  struct Settings {
    std::string path;
    bool create = false;  // create the file when it does not exist
    // Open for reading only (QueueOptions::read_only): the file may be read-only, and so
    // may its directory or file system (sqlite_file_access.hpp).
    bool read_only = false;
    int busy_timeout_ms = 10000;
    std::string synchronous = "FULL";
    // The page cache of this connection (PRAGMA cache_size), in MiB. It grows only as pages
    // are read, so a small database never uses it all.
    int cache_mib = kDefaultCacheMib;
    // The page size (PRAGMA page_size) of a new database: it takes effect on the file's first
    // write. An existing database keeps its own (changing it takes a VACUUM: docs/sqlite.md).
    int page_size = kDefaultPageSize;
  };

  // kNotFound when the file does not exist and create is false. A file this process cannot
  // write, opened for writing, is kUnavailable with a message that names it and says why.
  static Result<std::unique_ptr<Connection>> open(const Settings& settings);

  // Public for std::make_unique only: Key can be made by Connection alone.
  class Key {
    friend class Connection;
    Key() = default;
  };
  Connection(Key, sqlite3* db) : db_(db) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Prepared once per connection and cached by the address of the SQL text.
  // REQUIRES: sql points at a string constant (its address is the cache key).
  Result<std::unique_ptr<Statement>> prepare(const char* sql);
  Status exec(const char* sql);
  int changes() const { return sqlite3_changes(db_.get()); }
  std::int64_t last_insert_rowid() const { return sqlite3_last_insert_rowid(db_.get()); }

  // The readpast error for the connection's last failure, e.g. busy → kUnavailable.
  Error error(int code, std::string_view context) const;

  // When this connection's commits checkpoint the WAL (a connection opened for writing).
  const CheckpointPacer& checkpoints() const { return checkpoints_; }

 private:
  // SQLite's own busy_timeout sleeps ever longer (up to 100 ms) between tries, so a
  // waiting writer can keep missing the moments the lock is free while others grab it:
  // seconds-long stalls under contention. This handler retries after short, jittered
  // sleeps until busy_timeout_ms has passed since the first try.
  static int on_busy(void* self, int tries) noexcept;
  // readpast_lease_token(): a new lease token (core/lease_tokens.hpp) per call, for the lease
  // statements, which take as many as the rows they pick.
  static void lease_token(sqlite3_context* context, int argc, sqlite3_value** argv) noexcept;
  // The WAL hook of a writing connection, in place of SQLite's automatic checkpoint: runs a
  // PASSIVE checkpoint after a commit when checkpoints_ says it is due and no reader holds the
  // database file (sqlite_wal_read_lock.hpp).
  static int on_wal_commit(void* self, sqlite3* db, const char* name, int wal_frames) noexcept;

  // sqlite3_open_v2 of `name` (a path, or a URI with SQLITE_OPEN_URI), nothing else.
  static Result<std::unique_ptr<Connection>> open_file(const std::string& name, int flags);

  std::unique_ptr<sqlite3, DatabaseDeleter> db_;
  int busy_timeout_ms_ = 0;
  std::chrono::steady_clock::time_point busy_since_;
  std::minstd_rand busy_jitter_{std::random_device{}()};
  std::unordered_map<const char*, std::unique_ptr<sqlite3_stmt, StatementDeleter>> cache_;
  LeaseTokenSource tokens_;      // used by lease_token(), on the thread that runs the statement
  CheckpointPacer checkpoints_;  // used by on_wal_commit(), on the thread that commits
};

// Maps an SQLite result code onto readpast's errors: busy/locked past the busy timeout,
// a full disk and I/O errors are kUnavailable (worth retrying); constraint → kConflict.
Error sqlite_error(sqlite3* db, int code, std::string_view context);

// BEGIN IMMEDIATE on construction (takes the write lock up front, so a transaction never
// fails half-way on a lock upgrade); rolls back in the destructor unless committed.
class ImmediateTransaction {
 public:
  static Result<ImmediateTransaction> begin(Connection& connection);
  ImmediateTransaction(ImmediateTransaction&& other) noexcept
      : connection_(std::exchange(other.connection_, nullptr)) {}
  ImmediateTransaction& operator=(ImmediateTransaction&&) = delete;
  ~ImmediateTransaction();

  Status commit();

 private:
  explicit ImmediateTransaction(Connection& connection) : connection_(&connection) {}
  Connection* connection_;  // null once committed or rolled back
};

}  // namespace readpast::detail::sqlite
