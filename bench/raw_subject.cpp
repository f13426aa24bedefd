// The raw-SQL ceiling: the same job lifecycle in hand-written SQL on a minimal table, the
// statements prepared once per connection. On PostgreSQL the table and statements are the
// peer harness' sql-reference (sql/schema.sql, lease100.sql), except that the payload is
// bytea (like readpast's; the harness' jsonb would cost the ceiling a parse) and the lease
// returns the payload (a worker needs it; the harness returns ids only). MariaDB's ceiling is
// in raw_mariadb_subject.cpp.
#include <poll.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common.hpp"
#include "pg_client.hpp"
#include "pg_pool.hpp"
#include "run_threads.hpp"
#include "sqlite_client.hpp"
#include "subject.hpp"

#if READPAST_BENCH_MARIADB
#include "mariadb_parts.hpp"
#endif

namespace readpast::bench {
namespace {

// ---- PostgreSQL ------------------------------------------------------------------------

constexpr const char* kPgSchema = R"sql(
CREATE SCHEMA IF NOT EXISTS rawq;
CREATE TABLE IF NOT EXISTS rawq.jobs (
  id           bigserial   PRIMARY KEY,
  queue        text        NOT NULL DEFAULT 'default',
  priority     int         NOT NULL DEFAULT 0,
  run_at       timestamptz NOT NULL DEFAULT now(),
  payload      bytea       NOT NULL,
  attempts     int         NOT NULL DEFAULT 0,
  locked_by    text,
  locked_until timestamptz
);
CREATE INDEX IF NOT EXISTS jobs_ready ON rawq.jobs (priority, id) WHERE locked_until IS NULL;
)sql";

constexpr const char* kPgEnqueue =
    "INSERT INTO rawq.jobs (queue, payload) VALUES ($1::text, $2::bytea) RETURNING id";
constexpr const char* kPgEnqueueNotify =
    "WITH ins AS (INSERT INTO rawq.jobs (queue, payload) VALUES ($1::text, $2::bytea) "
    "RETURNING id) SELECT id, pg_notify('rawq_jobs', $1::text) FROM ins";
constexpr const char* kPgEnqueueBatch =
    "INSERT INTO rawq.jobs (queue, payload) SELECT $1::text, p FROM unnest($2::bytea[]) AS p "
    "RETURNING id";
constexpr const char* kPgCopy = "COPY rawq.jobs (queue, payload) FROM STDIN (FORMAT binary)";
// The rows to update are named by `id = ANY (ARRAY(…))`, one primary-key probe each, and
// not by a join with `c`: for a few hundred rows the planner joins `c` to a sequential scan
// of the whole table (the same fix as readpast's own lease in
// src/engines/postgres/sql/statements.sql), which made this ceiling slower than the best the
// database can do.
constexpr const char* kPgLease =
    "WITH c AS (SELECT id FROM rawq.jobs WHERE locked_until IS NULL AND run_at <= now() "
    "ORDER BY priority, id LIMIT $1::integer FOR UPDATE SKIP LOCKED) "
    "UPDATE rawq.jobs j SET locked_by = $2::text, locked_until = now() + interval '5 minutes', "
    "attempts = j.attempts + 1 WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) "
    "RETURNING j.id, j.payload";
constexpr const char* kPgComplete = "DELETE FROM rawq.jobs WHERE id = ANY($1::bigint[])";

class RawPgSubject final : public Subject {
 public:
  RawPgSubject(const Target& target, int threads)
      : conninfo_(target.pg_url),
        admin_(conninfo_),
        pool_(conninfo_, std::clamp(threads, 1, 8), prepare_statements) {
    admin_.exec(kPgSchema);
  }

  std::string system() const override { return "raw-sql"; }
  std::string describe() const override {
    return "minimal table rawq.jobs (harness sql/schema.sql, payload bytea); lease: " +
           std::string(kPgLease) + "; complete: " + kPgComplete + "; " +
           std::to_string(pool_.max_connections()) + " connections at most (readpast's pool)";
  }

  void reset() override { admin_.exec("TRUNCATE rawq.jobs"); }
  void prefill(std::int64_t n) override {
    for (std::int64_t from = 1; from <= n; from += 1'000'000) {
      admin_.exec(pg_prefill_sql("rawq.jobs", from, std::min(n, from + 999'999)));
    }
  }
  void settle() override {
    admin_.exec("VACUUM ANALYZE rawq.jobs");
    admin_.exec("CHECKPOINT");
  }
  std::int64_t unfinished() override { return admin_.scalar_int("SELECT count(*) FROM rawq.jobs"); }
  std::optional<std::int64_t> storage_bytes() override {
    return admin_.scalar_int(pg_schema_bytes_sql("rawq"));
  }

  void enqueue(std::string_view payload) override {
    auto c = acquire();
    c->run("enqueue", PgParams().bytes(kQueue).bytes(payload));
  }
  void enqueue_and_wake(std::string_view payload) override {
    auto c = acquire();
    c->run("enqueue_notify", PgParams().bytes(kQueue).bytes(payload));
  }
  std::vector<std::string> batch_forms() const override { return {"insert-unnest", "copy"}; }
  void use_batch_form(const std::string& form) override { copy_ = form == "copy"; }
  void enqueue_batch(std::span<const std::string> payloads) override {
    auto c = acquire();
    if (copy_) {
      c->copy_rows(kPgCopy, kQueue, payloads);
    } else {
      c->run("enqueue_batch", PgParams().bytes(kQueue).bytea_array(payloads));
    }
  }

  WorkerCounts work(const WorkerSetup& setup, const Handler& handler,
                    std::stop_token stop) override {
    return run_threads(setup, [&](int t, WorkerCounts& mine) {
      const std::string worker = "raw/" + std::to_string(::getpid()) + "/" + std::to_string(t);
      // An idle worker waits for a NOTIFY on a connection of its own that LISTENs.
      std::unique_ptr<PgConn> listener;
      if (!setup.until_empty) {
        listener = std::make_unique<PgConn>(conninfo_);
        listener->exec("LISTEN rawq_jobs");
      }
      std::vector<std::int64_t> ids;
      while (!stop.stop_requested()) {
        ids.clear();
        {
          auto c = acquire();
          const auto lease_start = Clock::now();
          auto rows = c->run("lease", PgParams().int4(setup.batch).bytes(worker));
          setup.lease_took(lease_start);
          ++mine.leases;
          for (int r = 0; r < PQntuples(rows.get()); ++r) {
            ids.push_back(pg_int8(rows.get(), r, 0));
            handler(ids.back(), pg_bytes(rows.get(), r, 1));
          }
        }
        if (ids.empty()) {
          ++mine.empty_leases;
          if (setup.until_empty) return;
          wait_for_notify(*listener, setup.idle_wait);
          continue;
        }
        {
          auto c = acquire();
          c->run("complete", PgParams().int8_array(ids));
        }
        mine.completed += static_cast<std::int64_t>(ids.size());
        if (setup.completed != nullptr) {
          setup.completed->fetch_add(static_cast<std::int64_t>(ids.size()));
        }
      }
    });
  }

  Cycle lease_cycle(int max_jobs) override {
    auto c = acquire();
    auto t0 = Clock::now();
    auto rows = c->run("lease", PgParams().int4(max_jobs).bytes("raw/depth"));
    auto t1 = Clock::now();
    std::vector<std::int64_t> ids;
    for (int r = 0; r < PQntuples(rows.get()); ++r) ids.push_back(pg_int8(rows.get(), r, 0));
    if (!ids.empty()) c->run("complete", PgParams().int8_array(ids));
    return Cycle::timed(ids.size(), t0, t1, Clock::now());
  }

 private:
  PgPool::Loan acquire() { return pool_.acquire(); }

  static void prepare_statements(PgConn& conn) {
    conn.prepare("enqueue", kPgEnqueue);
    conn.prepare("enqueue_notify", kPgEnqueueNotify);
    conn.prepare("enqueue_batch", kPgEnqueueBatch);
    conn.prepare("lease", kPgLease);
    conn.prepare("complete", kPgComplete);
  }

  static void wait_for_notify(PgConn& listener, std::chrono::milliseconds timeout) {
    PGconn* c = listener.raw();
    pollfd fd{PQsocket(c), POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(timeout.count())) > 0) {
      PQconsumeInput(c);
      while (PGnotify* n = PQnotifies(c)) PQfreemem(n);
    }
  }

  const std::string conninfo_;
  PgConn admin_;
  PgPool pool_;
  bool copy_ = false;
};

// ---- SQLite ----------------------------------------------------------------------------

constexpr const char* kSqliteSchema = R"sql(
CREATE TABLE IF NOT EXISTS rawq_jobs (
  id           INTEGER PRIMARY KEY,
  queue        TEXT    NOT NULL,
  priority     INTEGER NOT NULL DEFAULT 0,
  run_at       INTEGER NOT NULL,
  payload      BLOB    NOT NULL,
  attempts     INTEGER NOT NULL DEFAULT 0,
  locked_by    TEXT,
  locked_until INTEGER
);
CREATE INDEX IF NOT EXISTS rawq_ready ON rawq_jobs (priority, id) WHERE locked_until IS NULL;
)sql";

constexpr const char* kSqliteEnqueue =
    "INSERT INTO rawq_jobs (queue, run_at, payload) VALUES (?1, ?2, ?3)";
// One statement: SQLite takes the write lock when it starts, so it is its own short
// IMMEDIATE transaction.
#define RAWQ_SQLITE_LEASE(id_matches)                                                            \
  "UPDATE rawq_jobs SET locked_by = ?1, locked_until = ?2 + 300000000, attempts = attempts + 1 " \
  "WHERE id " id_matches                                                                         \
  " (SELECT id FROM rawq_jobs WHERE locked_until IS NULL AND run_at <= ?2 "                      \
  "ORDER BY priority, id LIMIT ?3) RETURNING id, payload"
constexpr const char* kSqliteLease = RAWQ_SQLITE_LEASE("IN");
// For one job: SQLite builds no ephemeral tables for `= (sub-select)` but the one RETURNING
// needs, against three for IN (see readpast's kLeaseOne, which does the same).
constexpr const char* kSqliteLeaseOne = RAWQ_SQLITE_LEASE("=");
#undef RAWQ_SQLITE_LEASE
constexpr const char* kSqliteComplete = "DELETE FROM rawq_jobs WHERE id = ?1";

// One connection with its statements prepared.
struct SqliteSession {
  SqliteSession(const std::string& path, const std::string& synchronous, int page_size)
      : db(path, synchronous, page_size),
        enqueue(db.raw(), kSqliteEnqueue),
        lease(db.raw(), kSqliteLease),
        lease_one(db.raw(), kSqliteLeaseOne),
        complete(db.raw(), kSqliteComplete) {}
  SqliteStmt& lease_of(int max_jobs) { return max_jobs == 1 ? lease_one : lease; }
  SqliteDb db;
  SqliteStmt enqueue;
  SqliteStmt lease;
  SqliteStmt lease_one;
  SqliteStmt complete;
};

class RawSqliteSubject final : public Subject {
 public:
  explicit RawSqliteSubject(const Target& target)
      : path_(target.sqlite_dir + "/raw.db"),
        synchronous_(target.sqlite_synchronous),
        page_size_(target.sqlite_page_size),
        admin_(path_, synchronous_, page_size_) {
    admin_.exec(kSqliteSchema);
  }

  std::string system() const override { return "raw-sqlite"; }
  std::string describe() const override {
    return "minimal table rawq_jobs, WAL, synchronous=" + synchronous_ +
           "; lease: " + std::string(kSqliteLease) + " (one job: WHERE id = (SELECT ...)); " +
           "complete: BEGIN IMMEDIATE; " + kSqliteComplete + " per job; COMMIT";
  }

  void reset() override { admin_.exec("DELETE FROM rawq_jobs"); }
  void prefill(std::int64_t n) override {
    const std::string now = std::to_string(wall_micros() - 1000);
    for (std::int64_t from = 1; from <= n; from += 1'000'000) {
      const std::int64_t to = std::min(n, from + 999'999);
      admin_.exec("WITH RECURSIVE s(i) AS (SELECT " + std::to_string(from) +
                  " UNION ALL SELECT i + 1 FROM s WHERE i < " + std::to_string(to) +
                  ") INSERT INTO rawq_jobs (queue, run_at, payload) SELECT '" +
                  std::string(kQueue) + "', " + now +
                  ", CAST('{\"seq\":' || i || ',\"user_id\":' || (100000 + i % 900000) || "
                  "',\"action\":\"send_welcome_email\",\"email\":\"user' || "
                  "(100000 + i % 900000) || '@example.com\",\"locale\":\"en-GB\"}' AS BLOB) "
                  "FROM s");
    }
  }
  void settle() override { admin_.exec("PRAGMA wal_checkpoint(TRUNCATE)"); }
  std::int64_t unfinished() override { return admin_.scalar_int("SELECT count(*) FROM rawq_jobs"); }
  std::optional<std::int64_t> storage_bytes() override { return sqlite_file_bytes(path_); }

  void enqueue(std::string_view payload) override {
    auto s = acquire();
    s->enqueue.bind_text(1, kQueue).bind(2, wall_micros()).bind_blob(3, payload);
    s->enqueue.step();
    s->enqueue.reset();
  }
  void enqueue_batch(std::span<const std::string> payloads) override {
    auto s = acquire();
    s->db.exec("BEGIN IMMEDIATE");
    const std::int64_t now = wall_micros();
    for (const auto& p : payloads) {
      s->enqueue.bind_text(1, kQueue).bind(2, now).bind_blob(3, p);
      s->enqueue.step();
      s->enqueue.reset();
    }
    s->db.exec("COMMIT");
  }

  WorkerCounts work(const WorkerSetup& setup, const Handler& handler,
                    std::stop_token stop) override {
    return run_threads(setup, [&](int t, WorkerCounts& mine) {
      const std::string worker = "raw/" + std::to_string(::getpid()) + "/" + std::to_string(t);
      SqliteSession s(path_, synchronous_, page_size_);
      SqliteStmt data_version(s.db.raw(), "PRAGMA data_version");
      std::vector<std::int64_t> ids;
      SqliteStmt& lease = s.lease_of(setup.batch);
      while (!stop.stop_requested()) {
        ids.clear();
        // (The handler runs between the steps and is timed with the lease: the benchmarks'
        // handlers do nothing.)
        const auto lease_start = Clock::now();
        lease.bind_text(1, worker).bind(2, wall_micros()).bind(3, setup.batch);
        while (lease.step()) {
          ids.push_back(lease.int64(0));
          handler(ids.back(), lease.blob(1));
        }
        lease.reset();
        setup.lease_took(lease_start);
        ++mine.leases;
        if (ids.empty()) {
          ++mine.empty_leases;
          if (setup.until_empty) return;
          // Idle: poll PRAGMA data_version (it changes when another connection commits)
          // every millisecond, up to idle_wait.
          data_version.step();
          const auto seen = data_version.int64(0);
          data_version.reset();
          const auto deadline = Clock::now() + setup.idle_wait;
          while (Clock::now() < deadline && !stop.stop_requested()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            data_version.step();
            const auto now = data_version.int64(0);
            data_version.reset();
            if (now != seen) break;
          }
          continue;
        }
        s.db.exec("BEGIN IMMEDIATE");
        for (std::int64_t id : ids) {
          s.complete.bind(1, id);
          s.complete.step();
          s.complete.reset();
        }
        s.db.exec("COMMIT");
        mine.completed += static_cast<std::int64_t>(ids.size());
        if (setup.completed != nullptr) {
          setup.completed->fetch_add(static_cast<std::int64_t>(ids.size()));
        }
      }
    });
  }

  Cycle lease_cycle(int max_jobs) override {
    auto s = acquire();
    std::vector<std::int64_t> ids;
    SqliteStmt& lease = s->lease_of(max_jobs);
    auto t0 = Clock::now();
    lease.bind_text(1, "raw/depth").bind(2, wall_micros()).bind(3, max_jobs);
    while (lease.step()) ids.push_back(lease.int64(0));
    lease.reset();
    auto t1 = Clock::now();
    s->db.exec("BEGIN IMMEDIATE");
    for (std::int64_t id : ids) {
      s->complete.bind(1, id);
      s->complete.step();
      s->complete.reset();
    }
    s->db.exec("COMMIT");
    return Cycle::timed(ids.size(), t0, t1, Clock::now());
  }

 private:
  class Lease {
   public:
    Lease(RawSqliteSubject& owner, std::unique_ptr<SqliteSession> s)
        : owner_(owner), session_(std::move(s)) {}
    Lease(const Lease&) = delete;
    ~Lease() {
      std::lock_guard lock(owner_.mu_);
      owner_.idle_.push_back(std::move(session_));
    }
    SqliteSession* operator->() const { return session_.get(); }

   private:
    RawSqliteSubject& owner_;
    std::unique_ptr<SqliteSession> session_;
  };

  Lease acquire() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        auto s = std::move(idle_.back());
        idle_.pop_back();
        return Lease(*this, std::move(s));
      }
    }
    return Lease(*this, std::make_unique<SqliteSession>(path_, synchronous_, page_size_));
  }

  const std::string path_;
  const std::string synchronous_;
  const int page_size_;
  SqliteDb admin_;
  std::mutex mu_;
  std::vector<std::unique_ptr<SqliteSession>> idle_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<Subject> make_raw_subject(const Target& target, int threads) {
  switch (target.engine) {
    case EngineKind::kPostgres:
      return std::make_unique<RawPgSubject>(target, threads);
    case EngineKind::kMariadb:
#if READPAST_BENCH_MARIADB
      return make_raw_mariadb_subject(target, threads);
#else
      fail("readpast_bench was built without the mariadb engine");
#endif
    case EngineKind::kSqlite:
      break;
  }
  return std::make_unique<RawSqliteSubject>(target);
}

}  // namespace readpast::bench
