// bench/subject.hpp — a system under measurement: readpast over its public API, or the raw
// SQL of the same job lifecycle on the same database (the ceiling readpast is compared
// with). Every benchmark is written once against this interface.
//
// The lifecycle both implement: enqueue (one job, or a batch in one round trip), lease up
// to B available jobs in hand-out order without blocking on rows others are taking, run a
// handler on each, complete them in one statement.
//
// Thread-safety: every method may be called from many threads at once, except reset(),
// prefill() and settle(), which are called while nothing else runs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "readpast/options.hpp"

namespace readpast::bench {

enum class EngineKind { kPostgres, kSqlite, kMariadb };

// Whether this build has the MariaDB parts (mariadb_parts.hpp): the mariadb engine is in
// READPAST_ENGINES.
#if READPAST_BENCH_MARIADB
inline constexpr bool kHaveMariadb = true;
#else
inline constexpr bool kHaveMariadb = false;
#endif

// Where the subjects live. A PostgreSQL or MariaDB run uses one database for both
// (readpast's tables and the raw table); a SQLite run uses two files in one directory.
struct Target {
  EngineKind engine = EngineKind::kSqlite;
  std::string pg_url;  // postgresql://...
  // readpast's own URL for the same database when it differs (readpast's parameters such as
  // ?pool_mode=transaction, or a pooler in between); empty: pg_url. Setup and the raw
  // subject always use pg_url.
  std::string readpast_pg_url;
  std::string mariadb_url;  // mariadb://USER@HOST:PORT/DATABASE, for both subjects
  std::string sqlite_dir;   // readpast.db and raw.db go here
  // SQLite's synchronous setting for both subjects: "full" (readpast's default: every
  // commit is synced to disk) or "normal" (WAL synced at checkpoints only; the numbers
  // then show CPU cost rather than the disk's flush latency).
  std::string sqlite_synchronous = "full";
  // readpast's page cache per SQLite connection (its URL's cache_mib); 0: readpast's default.
  int sqlite_cache_mib = 0;
  // The page size both subjects' new files get (readpast's URL's page_size); 0: readpast's
  // default for a new file, kDefaultSqlitePageSize.
  int sqlite_page_size = 0;
  std::string name() const {
    switch (engine) {
      case EngineKind::kPostgres:
        return "postgres";
      case EngineKind::kMariadb:
        return "mariadb";
      case EngineKind::kSqlite:
        break;
    }
    return "sqlite";
  }
};

// Durations of lease calls in µs, added by every worker thread, taken window by window by
// the snapshot suite. Thread-safe.
class LatencyLog {
 public:
  void add(double us) {
    std::lock_guard lock(mu_);
    values_.push_back(us);
  }
  std::vector<double> take() {
    std::lock_guard lock(mu_);
    return std::exchange(values_, {});
  }

 private:
  std::mutex mu_;
  std::vector<double> values_;  // guarded by mu_
};

// The handler of a benchmark job: (id, payload). It runs on a worker thread.
using Handler = std::function<void(std::int64_t id, std::string_view payload)>;

struct WorkerSetup {
  int threads = 8;  // worker threads of this process ("workers")
  int batch = 1;    // max jobs per lease: the thread's free slots
  // Drain: a thread stops when a lease finds nothing. Otherwise it waits for work
  // (LISTEN/NOTIFY on PostgreSQL, polling on SQLite and MariaDB) until stopped.
  bool until_empty = true;
  std::chrono::milliseconds idle_wait{1000};
  // Called once per completed batch with its size (progress display).
  std::atomic<std::int64_t>* completed = nullptr;
  // When set, every lease call's duration (those that find nothing too).
  LatencyLog* lease_latency = nullptr;

  // Records one lease call that started at `start`.
  void lease_took(std::chrono::steady_clock::time_point start) const {
    if (lease_latency == nullptr) return;
    lease_latency->add(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
            .count());
  }
};

struct WorkerCounts {
  std::int64_t completed = 0;
  std::int64_t leases = 0;        // lease calls
  std::int64_t empty_leases = 0;  // lease calls that found nothing
  std::int64_t lost = 0;          // completions refused (lease lost): must stay 0
  std::int64_t retries = 0;       // calls answered "busy/unavailable" and retried

  WorkerCounts& operator+=(const WorkerCounts& other) {
    completed += other.completed;
    leases += other.leases;
    empty_leases += other.empty_leases;
    lost += other.lost;
    retries += other.retries;
    return *this;
  }
};

class Subject {
 public:
  virtual ~Subject() = default;

  // "readpast" or "raw-sql" / "raw-sqlite" / "raw-mariadb".
  virtual std::string system() const = 0;
  // What it runs, for the JSON lines: the statements or API calls.
  virtual std::string describe() const = 0;

  // Administration (outside every timer).
  virtual void reset() = 0;                  // no jobs at all
  virtual void prefill(std::int64_t n) = 0;  // n available jobs, payload(i)
  // PostgreSQL: VACUUM ANALYZE the jobs table and CHECKPOINT, as the peer harness does
  // before each timed part. SQLite: a TRUNCATE checkpoint of the WAL. MariaDB: wait for
  // InnoDB's purge, ANALYZE TABLE, and flush the table's dirty pages (mariadb_parts.hpp).
  virtual void settle() = 0;
  virtual std::int64_t unfinished() = 0;  // jobs available or running
  // Bytes the subject's tables take on disk, indexes included (PostgreSQL: every relation
  // of its schema; SQLite: the database file and its WAL; MariaDB: data and index length as
  // InnoDB reports them); nullopt where it cannot tell.
  virtual std::optional<std::int64_t> storage_bytes() { return std::nullopt; }

  // Measured operations.
  virtual void enqueue(std::string_view payload) = 0;
  virtual void enqueue_batch(std::span<const std::string> payloads) = 0;
  // enqueue() that also wakes idle workers (add → start latency). readpast always does
  // (its insert trigger NOTIFYs); the raw ceiling adds pg_notify() only here, so that its
  // plain enqueue stays the bare single-INSERT ceiling.
  virtual void enqueue_and_wake(std::string_view payload) { enqueue(payload); }
  // Ways of sending a batch that the subject can measure; the enqueue benchmark tries each
  // and reports the best as the ceiling. The first is the default.
  virtual std::vector<std::string> batch_forms() const { return {"api"}; }
  virtual void use_batch_form(const std::string&) {}
  // Runs setup.threads worker threads in this process until stop (or, with until_empty,
  // until the queue is empty). Each thread: lease up to setup.batch jobs, call the handler
  // on each, complete them in one call.
  virtual WorkerCounts work(const WorkerSetup& setup, const Handler& handler,
                            std::stop_token stop) = 0;
  // One lease of up to max_jobs (timed) followed by their completion (timed separately);
  // returns the number leased. For lease cost vs queue depth.
  struct Cycle {
    int leased = 0;
    double lease_us = 0;
    double complete_us = 0;

    // `leased` jobs, leased from `start` to `leased_at` and completed by `completed_at`.
    using TimePoint = std::chrono::steady_clock::time_point;
    static Cycle timed(std::size_t leased, TimePoint start, TimePoint leased_at,
                       TimePoint completed_at) {
      using Micros = std::chrono::duration<double, std::micro>;
      return Cycle{static_cast<int>(leased), Micros(leased_at - start).count(),
                   Micros(completed_at - leased_at).count()};
    }
  };
  virtual Cycle lease_cycle(int max_jobs) = 0;

  // What the subject can tell about its own state, added to each window of the snapshot
  // suite (the ring prototype: its frontier and rotations); empty by default.
  virtual nlohmann::json window_notes() { return nlohmann::json::object(); }
};

// What the readpast subject does to readpast's tables outside every timer, per engine: the
// Subject methods of the same names.
class ReadpastTables {
 public:
  virtual ~ReadpastTables() = default;
  virtual void reset() = 0;
  virtual void prefill(std::int64_t n) = 0;
  virtual void settle() = 0;
  virtual std::int64_t unfinished() = 0;
  virtual std::optional<std::int64_t> storage_bytes() { return std::nullopt; }
};

// readpast through readpast::Queue. `options` are the Queue's (retention.succeeded zero
// deletes completed jobs, like the raw ceiling and graphile-worker do).
std::unique_ptr<Subject> make_readpast_subject(const Target& target, QueueOptions options);
// The raw-SQL ceiling: a minimal jobs table and hand-written statements for the same
// lifecycle, with as many connections as readpast's pool would use for `threads` threads.
std::unique_ptr<Subject> make_raw_subject(const Target& target, int threads);
// The prototype of docs/postgres-storage.md's storage in raw SQL (PostgreSQL only):
// bench/raw_ring_subject.cpp.
std::unique_ptr<Subject> make_raw_ring_subject(const Target& target, int threads);

}  // namespace readpast::bench
