// readpast as a benchmark subject: every measured operation goes through readpast::Queue.
#include <unistd.h>

#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common.hpp"
#include "pg_client.hpp"
#include "readpast/readpast.hpp"
#include "sqlite_client.hpp"
#include "subject.hpp"

#if READPAST_BENCH_MARIADB
#include "mariadb_parts.hpp"
#endif

namespace readpast::bench {

// The worker of the benchmarks, over the public Queue API: setup.threads threads, each
// leasing up to setup.batch jobs, running the handler on each and completing them with one
// complete_batch call; an idle thread waits in wait_for_work (LISTEN/NOTIFY on PostgreSQL).
// Threads that each lease, rather than readpast::Worker (one fetcher per queue handing
// jobs to handler threads), so that readpast runs the very shape of the raw-SQL ceiling
// beside it: the same connections, batches and threads, one lifecycle each.
WorkerCounts run_readpast_workers(Queue& queue, const WorkerSetup& setup, const Handler& handler,
                                  std::stop_token stop) {
  std::vector<WorkerCounts> counts(static_cast<std::size_t>(setup.threads));
  std::mutex mu;
  std::optional<std::string> error;  // guarded by mu: the first unexpected failure
  auto record = [&](const Error& e) {
    std::lock_guard lock(mu);
    if (!error) error = std::string(to_string(e.code)) + ": " + e.message;
  };
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < setup.threads; ++t) {
      threads.emplace_back([&, t] {
        WorkerCounts& mine = counts[static_cast<std::size_t>(t)];
        const LeaseRequest request{
            .queue = std::string(kQueue),
            .worker_id = "bench/" + std::to_string(::getpid()) + "/" + std::to_string(t),
            .max_jobs = setup.batch,
            .lease_duration = std::chrono::minutes(5)};
        std::vector<LeasedRef> refs;
        refs.reserve(static_cast<std::size_t>(setup.batch));
        while (!stop.stop_requested()) {
          const auto lease_start = Clock::now();
          auto jobs = queue.lease(request);
          setup.lease_took(lease_start);
          ++mine.leases;
          if (!jobs) {
            if (!jobs.error().is_unavailable()) return record(jobs.error());
            ++mine.retries;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
          }
          if (jobs->empty()) {
            ++mine.empty_leases;
            if (setup.until_empty) return;
            auto woken = queue.wait_for_work(kQueue, setup.idle_wait);
            if (!woken && !woken.error().is_unavailable()) return record(woken.error());
            continue;
          }
          refs.clear();
          for (const Job& job : *jobs) {
            handler(job.id, job.payload);
            refs.push_back(LeasedRef{job.id, *job.lease_token});
          }
          // The fence makes a re-sent completion safe: retried while the database is busy.
          while (true) {
            auto accepted = queue.complete_batch(refs);
            if (accepted) {
              for (bool ok : *accepted) ok ? ++mine.completed : ++mine.lost;
              break;
            }
            if (!accepted.error().is_unavailable()) return record(accepted.error());
            ++mine.retries;
          }
          if (setup.completed != nullptr) {
            setup.completed->fetch_add(static_cast<std::int64_t>(refs.size()));
          }
        }
      });
    }
  }
  if (error) fail("readpast worker: " + *error);
  WorkerCounts total;
  for (const auto& c : counts) total += c;
  return total;
}

namespace {

template <class T>
T must(Result<T> result, const char* what) {
  if (!result) fail(std::string("readpast ") + what + ": " + result.error().message);
  return std::move(*result);
}

// readpast's tables on PostgreSQL, through a connection of the benchmark's own.
class PgTables final : public ReadpastTables {
 public:
  explicit PgTables(const std::string& url) : pg_(url) {}
  // readpast.jobs is a view over the job tables (migrations 10, 17, 18 and 23); unique_keys
  // holds the keys of the live jobs (migration 15). Those that exist, so that a binary of an
  // older schema (an A/B run) resets its own.
  void reset() override {
    pg_.exec(
        "DO $$ BEGIN EXECUTE 'TRUNCATE ' || (SELECT string_agg(format('%I.%I', schemaname, "
        "tablename), ', ') FROM pg_catalog.pg_tables WHERE schemaname = 'readpast' AND "
        "tablename IN ('live', 'running', 'scheduled', 'waiting', 'done', 'unique_keys')); "
        "END $$");
  }
  void prefill(std::int64_t n) override {
    constexpr std::int64_t kChunk = 1'000'000;
    for (std::int64_t from = 1; from <= n; from += kChunk) {
      // Rows inserted by plain SQL are ordinary jobs (docs/sql.md). Into the live table, where
      // an insert into the jobs view puts them too, without the view's per-row trigger.
      pg_.exec(pg_prefill_sql("readpast.live", from, std::min(n, from + kChunk - 1)));
    }
  }
  void settle() override {
    pg_.exec("VACUUM ANALYZE readpast.live, readpast.running, readpast.done");
    pg_.exec("CHECKPOINT");
  }
  std::int64_t unfinished() override {
    return pg_.scalar_int(
        "SELECT count(*) FROM readpast.jobs WHERE state IN ('available', 'running')");
  }
  std::optional<std::int64_t> storage_bytes() override {
    return pg_.scalar_int(pg_schema_bytes_sql("readpast"));
  }

 private:
  PgConn pg_;
};

// readpast's tables in its SQLite file.
class SqliteTables final : public ReadpastTables {
 public:
  SqliteTables(const std::string& path, const std::string& synchronous)
      : path_(path), db_(path, synchronous) {}
  void reset() override { db_.exec("DELETE FROM readpast_jobs"); }
  void prefill(std::int64_t n) override {
    constexpr std::int64_t kChunk = 1'000'000;
    for (std::int64_t from = 1; from <= n; from += kChunk) {
      db_.exec(prefill_sql(from, std::min(n, from + kChunk - 1), wall_micros() - 1000));
    }
  }
  void settle() override { db_.exec("PRAGMA wal_checkpoint(TRUNCATE)"); }
  std::int64_t unfinished() override {
    return db_.scalar_int(
        "SELECT count(*) FROM readpast_jobs WHERE state IN ('available', 'running')");
  }
  std::optional<std::int64_t> storage_bytes() override { return sqlite_file_bytes(path_); }

 private:
  static std::string prefill_sql(std::int64_t from, std::int64_t to, std::int64_t now_us) {
    const std::string now = std::to_string(now_us);
    return "WITH RECURSIVE s(i) AS (SELECT " + std::to_string(from) +
           " UNION ALL SELECT i + 1 FROM s WHERE i < " + std::to_string(to) +
           ") INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts, "
           "enqueued_at, payload) SELECT '" +
           std::string(kQueue) + "', 'available', 100, " + now + ", 0, 25, " + now +
           ", CAST('{\"seq\":' || i || ',\"user_id\":' || (100000 + i % 900000) || "
           "',\"action\":\"send_welcome_email\",\"email\":\"user' || (100000 + i % 900000) || "
           "'@example.com\",\"locale\":\"en-GB\"}' AS BLOB) FROM s";
  }
  std::string path_;
  SqliteDb db_;
};

std::unique_ptr<ReadpastTables> make_tables(const Target& target) {
  switch (target.engine) {
    case EngineKind::kPostgres:
      return std::make_unique<PgTables>(target.pg_url);
    case EngineKind::kMariadb:
#if READPAST_BENCH_MARIADB
      return make_mariadb_readpast_tables(target);
#else
      fail("readpast_bench was built without the mariadb engine");
#endif
    case EngineKind::kSqlite:
      break;
  }
  return std::make_unique<SqliteTables>(target.sqlite_dir + "/readpast.db",
                                        target.sqlite_synchronous);
}

std::string readpast_url(const Target& target) {
  switch (target.engine) {
    case EngineKind::kPostgres:
      return target.readpast_pg_url.empty() ? target.pg_url : target.readpast_pg_url;
    case EngineKind::kMariadb:
      return target.mariadb_url;
    case EngineKind::kSqlite:
      break;
  }
  return "sqlite:" + target.sqlite_dir + "/readpast.db?synchronous=" + target.sqlite_synchronous +
         (target.sqlite_cache_mib > 0 ? "&cache_mib=" + std::to_string(target.sqlite_cache_mib)
                                      : "") +
         (target.sqlite_page_size > 0 ? "&page_size=" + std::to_string(target.sqlite_page_size)
                                      : "");
}

NewJob new_job(std::string_view payload) {
  NewJob job;
  job.queue = std::string(kQueue);
  job.payload = std::string(payload);
  return job;
}

class ReadpastSubject final : public Subject {
 public:
  ReadpastSubject(const Target& target, QueueOptions options)
      : retention_zero_(options.retention.succeeded == Duration::zero()) {
    options.init_schema = true;
    queue_.emplace(must(Queue::open(readpast_url(target), std::move(options)), "open"));
    tables_ = make_tables(target);
  }

  std::string system() const override { return "readpast"; }
  std::string describe() const override {
    return std::string(
               "readpast::Queue: enqueue / enqueue_batch; workers: lease(max_jobs=B) "
               "then complete_batch; retention.succeeded=") +
           (retention_zero_ ? "0 (completed jobs deleted)" : "24h (completed jobs kept)");
  }

  void reset() override { tables_->reset(); }
  void prefill(std::int64_t n) override { tables_->prefill(n); }
  void settle() override { tables_->settle(); }
  std::int64_t unfinished() override { return tables_->unfinished(); }
  std::optional<std::int64_t> storage_bytes() override { return tables_->storage_bytes(); }

  void enqueue(std::string_view payload) override {
    must(queue_->enqueue(new_job(payload)), "enqueue");
  }

  void enqueue_batch(std::span<const std::string> payloads) override {
    std::vector<NewJob> jobs;
    jobs.reserve(payloads.size());
    for (const auto& p : payloads) jobs.push_back(new_job(p));
    must(queue_->enqueue_batch(jobs), "enqueue_batch");
  }

  WorkerCounts work(const WorkerSetup& setup, const Handler& handler,
                    std::stop_token stop) override {
    return run_readpast_workers(*queue_, setup, handler, std::move(stop));
  }

  Cycle lease_cycle(int max_jobs) override {
    const LeaseRequest request{.queue = std::string(kQueue),
                               .worker_id = "bench/depth",
                               .max_jobs = max_jobs,
                               .lease_duration = std::chrono::minutes(5)};
    auto t0 = Clock::now();
    auto jobs = must(queue_->lease(request), "lease");
    auto t1 = Clock::now();
    std::vector<LeasedRef> refs;
    for (const Job& job : jobs) refs.push_back(LeasedRef{job.id, *job.lease_token});
    if (!refs.empty()) must(queue_->complete_batch(refs), "complete_batch");
    return Cycle::timed(jobs.size(), t0, t1, Clock::now());
  }

 private:
  const bool retention_zero_;
  std::optional<Queue> queue_;
  std::unique_ptr<ReadpastTables> tables_;  // administration, outside every timer
};

}  // namespace

std::unique_ptr<Subject> make_readpast_subject(const Target& target, QueueOptions options) {
  return std::make_unique<ReadpastSubject>(target, std::move(options));
}

}  // namespace readpast::bench
