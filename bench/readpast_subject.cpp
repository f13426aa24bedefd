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
          auto jobs = queue.lease(request);
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
  for (const auto& c : counts) {
    total.completed += c.completed;
    total.leases += c.leases;
    total.empty_leases += c.empty_leases;
    total.lost += c.lost;
    total.retries += c.retries;
  }
  return total;
}

namespace {

template <class T>
T must(Result<T> result, const char* what) {
  if (!result) fail(std::string("readpast ") + what + ": " + result.error().message);
  return std::move(*result);
}

std::string sqlite_prefill_sql(std::int64_t from, std::int64_t to, std::int64_t now_us) {
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

NewJob new_job(std::string_view payload) {
  NewJob job;
  job.queue = std::string(kQueue);
  job.payload = std::string(payload);
  return job;
}

class ReadpastSubject final : public Subject {
 public:
  ReadpastSubject(const Target& target, QueueOptions options)
      : target_(target), retention_zero_(options.retention.succeeded == Duration::zero()) {
    options.init_schema = true;
    const std::string url =
        target.engine == EngineKind::kPostgres
            ? (target.readpast_pg_url.empty() ? target.pg_url : target.readpast_pg_url)
            : "sqlite:" + target.sqlite_dir +
                  "/readpast.db?synchronous=" + target.sqlite_synchronous +
                  (target.sqlite_cache_mib > 0
                       ? "&cache_mib=" + std::to_string(target.sqlite_cache_mib)
                       : "");
    queue_.emplace(must(Queue::open(url, std::move(options)), "open"));
    if (target.engine == EngineKind::kPostgres) {
      pg_.emplace(target.pg_url);
    } else {
      sqlite_.emplace(target.sqlite_dir + "/readpast.db", target.sqlite_synchronous);
    }
  }

  std::string system() const override { return "readpast"; }
  std::string describe() const override {
    return std::string(
               "readpast::Queue: enqueue / enqueue_batch; workers: lease(max_jobs=B) "
               "then complete_batch; retention.succeeded=") +
           (retention_zero_ ? "0 (completed jobs deleted)" : "24h (completed jobs kept)");
  }

  void reset() override {
    if (pg_) {
      pg_->exec("TRUNCATE readpast.jobs");
    } else {
      sqlite_->exec("DELETE FROM readpast_jobs");
    }
  }

  void prefill(std::int64_t n) override {
    constexpr std::int64_t kChunk = 1'000'000;
    for (std::int64_t from = 1; from <= n; from += kChunk) {
      const std::int64_t to = std::min(n, from + kChunk - 1);
      if (pg_) {
        // Into the table readpast's SQL interface documents: rows inserted by plain SQL
        // are ordinary jobs.
        pg_->exec(pg_prefill_sql("readpast.jobs", from, to));
      } else {
        sqlite_->exec(sqlite_prefill_sql(from, to, wall_micros() - 1000));
      }
    }
  }

  void settle() override {
    if (pg_) {
      pg_->exec("VACUUM ANALYZE readpast.jobs");
      pg_->exec("CHECKPOINT");
    } else {
      sqlite_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
    }
  }

  std::int64_t unfinished() override {
    if (pg_) {
      return pg_->scalar_int(
          "SELECT count(*) FROM readpast.jobs WHERE state IN ('available', 'running')");
    }
    return sqlite_->scalar_int(
        "SELECT count(*) FROM readpast_jobs WHERE state IN ('available', 'running')");
  }

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
  const Target target_;
  const bool retention_zero_;
  std::optional<Queue> queue_;
  std::optional<PgConn> pg_;        // administration, PostgreSQL
  std::optional<SqliteDb> sqlite_;  // administration, SQLite
};

}  // namespace

std::unique_ptr<Subject> make_readpast_subject(const Target& target, QueueOptions options) {
  return std::make_unique<ReadpastSubject>(target, std::move(options));
}

}  // namespace readpast::bench
