#include "engines/sqlite/sqlite_connection.hpp"

#include <array>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>

#include "engines/sqlite/sqlite_file_access.hpp"
#include "engines/sqlite/sqlite_wal_read_lock.hpp"
#include "engines/sqlite/sqlite_wal_vfs.hpp"

namespace readpast::detail::sqlite {

Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return fail_with(sqlite_error(db_, rc, "running a statement"));
}

std::string Statement::text(int column) const {
  const auto* data = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(data), static_cast<std::size_t>(size));
}

std::string Statement::blob(int column) const {
  const void* data = sqlite3_column_blob(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr) return {};
  return std::string(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

std::optional<std::int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::optional<std::string> Statement::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

namespace {

// A failure to open or set up `path` for writing: named, with the reason when the file, its
// directory or its file system is what refuses (else SQLite's own words).
Error not_writable(const std::string& path, const std::string& sqlite_says) {
  const std::string why = why_not_writable(path);
  return Error::unavailable("cannot write database file '" + path +
                            "': " + (why.empty() ? sqlite_says : why));
}

}  // namespace

Result<std::unique_ptr<Connection>> Connection::open(const Settings& settings) {
  std::error_code ec;
  if (!settings.create && !std::filesystem::exists(settings.path, ec)) {
    return fail_with(Error::not_found("database file '" + settings.path +
                                      "' does not exist; create it with `readpast init`"));
  }
  int flags = settings.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  flags |= SQLITE_OPEN_NOMUTEX;
  if (settings.create && !settings.read_only) flags |= SQLITE_OPEN_CREATE;
  auto connection = open_file(settings.path, flags);
  if (!connection) {
    // E.g. `readpast init` of a new file in a directory it cannot write.
    if (!settings.read_only && !why_not_writable(settings.path).empty()) {
      return fail_with(not_writable(settings.path, connection.error().message));
    }
    return fail_with(connection.error());
  }
  sqlite3* raw = (*connection)->db_.get();
  if (settings.read_only) {
    // A WAL-mode read needs the -shm file, which a read-only place cannot get. When no
    // -wal or -shm file exists, no connection has the file open for writing, and none can
    // while nobody can write there: read it as immutable.
    if (auto ok = (*connection)->exec("SELECT count(*) FROM sqlite_master"); !ok) {
      const int code = sqlite3_errcode(raw) & 0xff;
      const std::string why = why_not_writable(settings.path);
      // (Missing -shm: CANTOPEN, or READONLY when SQLite tried to create it.)
      const bool no_shm = code == SQLITE_CANTOPEN || code == SQLITE_READONLY;
      if (!no_shm || why.empty() || !has_no_wal_files(settings.path)) {
        return fail_with(Error::unavailable("cannot read database file '" + settings.path +
                                            "': " + sqlite3_errmsg(raw) +
                                            (why.empty() ? "" : " (" + why + ")")));
      }
      connection = open_file(immutable_uri(settings.path), flags | SQLITE_OPEN_URI);
      if (!connection) return fail_with(connection.error());
      raw = (*connection)->db_.get();
    }
  } else if (sqlite3_db_readonly(raw, "main") == 1) {
    // SQLite opens a file it cannot write read-only without a word; every write would then
    // fail with "attempt to write a readonly database".
    return fail_with(not_writable(settings.path, "it is read-only"));
  }
  (*connection)->busy_timeout_ms_ = settings.busy_timeout_ms;
  sqlite3_busy_handler(raw, &Connection::on_busy, connection->get());
  // Not SQLITE_DETERMINISTIC: every call returns a new token.
  if (int code =
          sqlite3_create_function_v2(raw, "readpast_lease_token", 0, SQLITE_UTF8, connection->get(),
                                     &Connection::lease_token, nullptr, nullptr, nullptr);
      code != SQLITE_OK) {
    return fail_with((*connection)->error(code, "registering readpast_lease_token()"));
  }
  if (!settings.read_only) {
    // Before anything writes the file: on a new (empty) database this sets its page size;
    // on any other it changes nothing. A number we checked, never user text.
    const std::string page_size = "PRAGMA page_size=" + std::to_string(settings.page_size);
    if (sqlite3_exec(raw, page_size.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return fail_with((*connection)->error(sqlite3_errcode(raw), "setting page_size"));
    }
    // WAL lets readers run beside the one writer and makes a commit one append. It is a
    // property of the file, so setting it on every open is cheap once it is set. (A
    // read-only connection reads a WAL file as such without it.)
    if (auto ok = (*connection)->exec("PRAGMA journal_mode=WAL"); !ok) {
      const int code = sqlite3_errcode(raw) & 0xff;
      if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY) {
        return fail_with(not_writable(settings.path, sqlite3_errmsg(raw)));
      }
      return fail_with(ok.error());
    }
    // A read transaction held open elsewhere (a report, a backup) keeps checkpoints from
    // reaching the end of the WAL, which then grows by every commit for as long as it is
    // held: gigabytes in minutes under load. SQLite reuses the file from its start once a
    // checkpoint has caught up, but never gives the space back unless told to: with this
    // limit the first commit after that restart cuts the file back to the limit.
    const std::string limit = "PRAGMA journal_size_limit=" + std::to_string(kWalSizeLimitBytes);
    if (sqlite3_exec(raw, limit.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return fail_with((*connection)->error(sqlite3_errcode(raw), "setting journal_size_limit"));
    }
    // Replaces SQLite's automatic checkpoint (sqlite_checkpoint_pacer.hpp says why).
    sqlite3_wal_hook(raw, &Connection::on_wal_commit, connection->get());
    std::string synchronous = "PRAGMA synchronous=" + settings.synchronous;
    if (sqlite3_exec(raw, synchronous.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return fail_with((*connection)->error(sqlite3_errcode(raw), "setting synchronous"));
    }
  }
  // A negative cache_size is in KiB. The value is a number we formatted, never user text.
  std::string cache_size = "PRAGMA cache_size=-" + std::to_string(settings.cache_mib * 1024);
  if (sqlite3_exec(raw, cache_size.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return fail_with((*connection)->error(sqlite3_errcode(raw), "setting cache_size"));
  }
  return std::move(*connection);
}

Result<std::unique_ptr<Connection>> Connection::open_file(const std::string& name, int flags) {
  sqlite3* raw = nullptr;
  // The VFS extends a growing WAL ahead of its appends (sqlite_wal_vfs.hpp says why).
  int rc = sqlite3_open_v2(name.c_str(), &raw, flags, wal_vfs_name());
  auto connection = std::make_unique<Connection>(Key{}, raw);  // owns raw even on failure
  if (rc != SQLITE_OK) {
    std::string why = raw != nullptr ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return fail_with(Error::unavailable("cannot open database file '" + name + "': " + why));
  }
  sqlite3_extended_result_codes(raw, 1);
  return connection;
}

int Connection::on_busy(void* self, int tries) noexcept {
  auto* connection = static_cast<Connection*>(self);
  const auto now = std::chrono::steady_clock::now();
  if (tries == 0) connection->busy_since_ = now;
  if (now - connection->busy_since_ >= std::chrono::milliseconds(connection->busy_timeout_ms_)) {
    return 0;  // give up: the caller gets SQLITE_BUSY, reported as kUnavailable
  }
  std::uniform_int_distribution<int> sleep_us(100, 1000);
  std::this_thread::sleep_for(std::chrono::microseconds(sleep_us(connection->busy_jitter_)));
  return 1;
}

void Connection::lease_token(sqlite3_context* context, int /*argc*/,
                             sqlite3_value** /*argv*/) noexcept {
  auto* connection = static_cast<Connection*>(sqlite3_user_data(context));
  std::array<char, kLeaseTokenHexDigits> hex{};
  try {
    connection->tokens_.next_hex(hex);
  } catch (const std::exception& e) {
    sqlite3_result_error(context, e.what(), -1);  // no random source: the lease fails
    return;
  }
  sqlite3_result_text(context, hex.data(), static_cast<int>(hex.size()), SQLITE_TRANSIENT);
}

int Connection::on_wal_commit(void* self, sqlite3* db, const char* name, int wal_frames) noexcept {
  auto& pacer = static_cast<Connection*>(self)->checkpoints_;
  const auto started = CheckpointPacer::Clock::now();
  if (!pacer.due(wal_frames, started)) return SQLITE_OK;
  // While a reader holds the database file an attempt can copy nothing, and it would sort the
  // whole WAL before finding that out (sqlite_wal_read_lock.hpp).
  if (reader_holds_database_file(db)) {
    pacer.skipped();
    return SQLITE_OK;
  }
  int log = -1;
  int checkpointed = -1;
  // PASSIVE never waits for readers or writers: a checkpoint it cannot finish is left to
  // a later commit. Its failure is not the commit's (SQLite's own automatic checkpoint
  // ignores it the same way).
  if (sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, &checkpointed) !=
      SQLITE_OK) {
    log = checkpointed = -1;
  }
  pacer.attempted(log, checkpointed, started, CheckpointPacer::Clock::now());
  return SQLITE_OK;
}

Result<std::unique_ptr<Statement>> Connection::prepare(const char* sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    if (rc != SQLITE_OK) return fail_with(error(rc, "preparing a statement"));
    it = cache_.emplace(sql, std::unique_ptr<sqlite3_stmt, StatementDeleter>(raw)).first;
  }
  return std::make_unique<Statement>(it->second.get(), db_.get());
}

Status Connection::exec(const char* sql) {
  int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return fail_with(error(rc, "executing SQL"));
  return {};
}

Error Connection::error(int code, std::string_view context) const {
  return sqlite_error(db_.get(), code, context);
}

Error sqlite_error(sqlite3* db, int code, std::string_view context) {
  std::string message = std::string(context) + ": " + sqlite3_errmsg(db);
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Error::unavailable("database is locked by another connection past the busy timeout (" +
                                message + ")");
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      return Error::unavailable(message);
    case SQLITE_CONSTRAINT:
      return Error::conflict(message);
    default:
      return Error::internal("sqlite: " + message);
  }
}

Result<ImmediateTransaction> ImmediateTransaction::begin(Connection& connection) {
  if (auto ok = connection.exec("BEGIN IMMEDIATE"); !ok) return fail_with(ok.error());
  return ImmediateTransaction(connection);
}

ImmediateTransaction::~ImmediateTransaction() {
  if (connection_ != nullptr) (void)connection_->exec("ROLLBACK");
}

Status ImmediateTransaction::commit() {
  Connection* connection = std::exchange(connection_, nullptr);
  if (auto ok = connection->exec("COMMIT"); !ok) {
    // A failed COMMIT (e.g. disk full) leaves the transaction open: roll it back so the
    // connection is usable again, and report the failure — never a false success.
    (void)connection->exec("ROLLBACK");
    return ok;
  }
  return {};
}

}  // namespace readpast::detail::sqlite
