// The raw-SQL ceiling on MariaDB: the job lifecycle of raw_subject.cpp's PostgreSQL ceiling,
// hand-written for InnoDB, on the same server and database as readpast's tables.
//
// - A minimal table, rawq_jobs: a state of two values, one secondary index in hand-out
//   order (state, priority, run_at, id), so that the available jobs are one range of it
//   (InnoDB has no partial index); DATETIME(6) times from the server's clock.
// - Lease: one short transaction at READ COMMITTED in two round trips: START TRANSACTION and
//   the pick (SELECT id, payload ... FOR UPDATE SKIP LOCKED LIMIT B along that index), then
//   the take (UPDATE ... WHERE id IN (the ids picked): state, one lease token for the
//   batch, expiry) and COMMIT. Several statements share a round trip; the pick's rows are
//   the lease's result, read once.
// - Complete: DELETE ... WHERE id IN (...), autocommit (readpast runs with
//   retention.succeeded = 0, which deletes completed jobs too).
// - Enqueue: a prepared single-row INSERT (binary protocol, no parse per job); batches as
//   one multi-row INSERT, or that prepared INSERT with array binding (MariaDB's bulk
//   execute, its COPY): the enqueue suite measures both and takes the better as the ceiling.
// - Deadlocks (1213) and lock-wait timeouts (1205) roll back and run again.
// - Connections: one per worker thread (readpast's MariaDB pool opens one per concurrent
//   call, without a cap), and a pool for enqueues and the depth suite.
// - Idle workers: MariaDB has no NOTIFY, so they poll: one poller thread per work() call
//   reads whether a job is due every millisecond while any worker is idle, and wakes one
//   idle worker each time one is.
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "common.hpp"
#include "mariadb_client.hpp"
#include "mariadb_parts.hpp"
#include "run_threads.hpp"

namespace readpast::bench {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS rawq_jobs (
  id           BIGINT       NOT NULL AUTO_INCREMENT,
  queue        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'default',
  state        ENUM('available', 'running') NOT NULL DEFAULT 'available',
  priority     INT          NOT NULL DEFAULT 0,
  run_at       DATETIME(6)  NOT NULL DEFAULT NOW(6),
  payload      LONGBLOB     NOT NULL,
  attempts     INT          NOT NULL DEFAULT 0,
  lease_token  CHAR(32)     CHARACTER SET ascii COLLATE ascii_bin NULL,
  locked_by    VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
  locked_until DATETIME(6)  NULL,
  PRIMARY KEY (id),
  KEY rawq_ready (state, priority, run_at, id)
) ENGINE = InnoDB
)sql";

// The pick: kPick, B, kPickLock. FORCE INDEX: right after a TRUNCATE and a prefill the
// statistics may not yet favour the index, and a pick that scanned the table would lock
// what it scans.
constexpr std::string_view kPick =
    "SELECT id, payload FROM rawq_jobs FORCE INDEX (rawq_ready) "
    "WHERE state = 'available' AND run_at <= NOW(6) "
    "ORDER BY priority, run_at, id LIMIT ";
constexpr std::string_view kPickLock = " FOR UPDATE SKIP LOCKED";
// The take: SET ... then WHERE id IN (ids) appended.
constexpr std::string_view kTake =
    "UPDATE rawq_jobs SET state = 'running', attempts = attempts + 1, "
    "locked_until = NOW(6) + INTERVAL 5 MINUTE, ";
constexpr std::string_view kComplete = "DELETE FROM rawq_jobs WHERE id IN (";
constexpr std::string_view kInsertValues = "INSERT INTO rawq_jobs (queue, payload) VALUES ";
// An idle worker's poll: a plain read (no lock) along rawq_ready.
constexpr std::string_view kProbe =
    "SELECT EXISTS (SELECT 1 FROM rawq_jobs FORCE INDEX (rawq_ready) "
    "WHERE state = 'available' AND run_at <= NOW(6))";
constexpr int kLockRetries = 50;

std::string insert_one_sql() {
  return std::string(kInsertValues) + "('" + std::string(kQueue) + "', ?)";
}

// 32 hex digits, one per lease.
std::string random_token() {
  thread_local std::mt19937_64 random(std::random_device{}());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(32, '0');
  for (int half = 0; half < 2; ++half) {
    std::uint64_t bits = random();
    for (int i = 0; i < 16; ++i, bits >>= 4) token[half * 16 + i] = kHex[bits & 15];
  }
  return token;
}

void append_ids(std::string& sql, std::span<const std::int64_t> ids) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) sql += ',';
    sql += std::to_string(ids[i]);
  }
  sql += ')';
}

// Runs body() and, on a deadlock or lock-wait timeout, rolls back and runs it again.
template <class Body>
auto with_retries(MdbConn& conn, std::int64_t& retries, Body&& body) {
  for (int attempt = 0;; ++attempt) {
    try {
      return body();
    } catch (const MdbError& e) {
      if (!e.retryable() || attempt >= kLockRetries) throw;
      conn.exec("ROLLBACK");
      ++retries;
      std::this_thread::sleep_for(std::chrono::microseconds(200 * (1 + attempt % 8)));
    }
  }
}

// One lease of up to max_jobs: the rows (id, payload) taken; `ids` gets their ids.
MdbRows lease(MdbConn& conn, int max_jobs, std::string_view worker, std::vector<std::int64_t>& ids,
              std::int64_t& retries) {
  const std::string pick = "START TRANSACTION; " + std::string(kPick) + std::to_string(max_jobs) +
                           std::string(kPickLock);
  return with_retries(conn, retries, [&] {
    ids.clear();
    MdbRows rows = conn.query(pick);
    if (rows.empty()) {
      conn.exec("COMMIT");
      return rows;
    }
    std::string take(kTake);
    take.reserve(take.size() + 120 + rows.size() * 12);
    take += "lease_token = '" + random_token() + "', locked_by = '" + std::string(worker) +
            "' WHERE id IN (";
    for (std::size_t r = 0; r < rows.size(); ++r) ids.push_back(rows.int64(r, 0));
    append_ids(take, ids);
    take += "; COMMIT";
    conn.exec(take);
    return rows;
  });
}

void complete(MdbConn& conn, std::span<const std::int64_t> ids, std::int64_t& retries) {
  std::string sql(kComplete);
  sql.reserve(sql.size() + ids.size() * 12);
  append_ids(sql, ids);
  with_retries(conn, retries, [&] { conn.exec(sql); });
}

// One connection with its prepared INSERT.
struct Session {
  explicit Session(const MdbUrl& url) : conn(url), insert(conn, insert_one_sql()) {}
  MdbConn conn;
  MdbStmt insert;
};

// Wakes the idle worker threads of one work() call (see the top of the file). A waiter
// holds no connection of its own to the poll: one poll serves every idle thread.
class IdlePoller {
 public:
  explicit IdlePoller(const MdbUrl& url)
      : conn_(url), thread_([this](std::stop_token stop) { run(stop); }) {}
  ~IdlePoller() {
    thread_.request_stop();
    thread_.join();
  }
  IdlePoller(const IdlePoller&) = delete;
  IdlePoller& operator=(const IdlePoller&) = delete;

  // Returns when the poll saw a due job, after `timeout`, or when `stop` is requested.
  void wait(std::chrono::milliseconds timeout, std::stop_token stop) {
    std::unique_lock lock(mu_);
    if (!error_.empty()) fail("raw-mariadb poller: " + error_);
    ++waiting_;
    poll_needed_.notify_one();
    if (woken_.wait_for(lock, stop, timeout, [&] { return permits_ > 0 || !error_.empty(); }) &&
        permits_ > 0) {
      --permits_;
    }
    --waiting_;
    permits_ = std::min(permits_, waiting_);  // none left for a waiter that went away
  }

 private:
  void run(std::stop_token stop) {
    std::unique_lock lock(mu_);
    while (!stop.stop_requested()) {
      // Only while some thread waits without a wake-up on its way.
      if (!poll_needed_.wait(lock, stop, [&] { return waiting_ > permits_; })) break;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      bool due = false;
      try {
        due = conn_.scalar_int(kProbe) != 0;
      } catch (const std::exception& e) {
        lock.lock();
        error_ = e.what();
        woken_.notify_all();
        return;
      }
      lock.lock();
      if (due && waiting_ > permits_) {
        ++permits_;
        woken_.notify_one();
      }
    }
  }

  MdbConn conn_;  // used by the poller thread only
  std::mutex mu_;
  std::condition_variable_any poll_needed_;
  std::condition_variable_any woken_;
  int waiting_ = 0;      // guarded by mu_: threads in wait()
  int permits_ = 0;      // guarded by mu_: wake-ups not yet taken
  std::string error_;    // guarded by mu_: why the poller stopped
  std::jthread thread_;  // last: starts once the members it uses exist
};

class RawMariadbSubject final : public Subject {
 public:
  explicit RawMariadbSubject(const Target& target)
      : url_(MdbUrl::parse(target.mariadb_url)), admin_(url_) {
    admin_.exec(kSchema);
  }

  std::string system() const override { return "raw-mariadb"; }
  std::string describe() const override {
    return "minimal InnoDB table rawq_jobs (state ENUM, index rawq_ready (state, priority, "
           "run_at, id)); lease at READ COMMITTED, one transaction in two round trips: "
           "START TRANSACTION; " +
           std::string(kPick) + "B" + std::string(kPickLock) + "; then " + std::string(kTake) +
           "lease_token = '<one per lease>', locked_by = '<worker>' WHERE id IN (<picked>); "
           "COMMIT; complete: " +
           std::string(kComplete) +
           "<ids>) (autocommit); enqueue: prepared INSERT; batch: multi-row INSERT or the "
           "prepared INSERT with array binding (bulk execute); deadlock and lock-wait timeout "
           "retried; one connection per worker thread; idle workers poll (no NOTIFY in "
           "MariaDB): one poller thread per process runs " +
           std::string(kProbe) + " every 1 ms while a worker is idle and wakes one";
  }

  void reset() override { admin_.exec("TRUNCATE TABLE rawq_jobs"); }
  void prefill(std::int64_t n) override {
    for (std::int64_t from = 1; from <= n; from += 1'000'000) {
      admin_.exec("INSERT INTO rawq_jobs (queue, payload) " +
                  mariadb_prefill_select(from, std::min(n, from + 999'999), ""));
    }
  }
  void settle() override { settle_mariadb_table(admin_, "rawq_jobs"); }
  std::int64_t unfinished() override { return admin_.scalar_int("SELECT count(*) FROM rawq_jobs"); }
  std::optional<std::int64_t> storage_bytes() override {
    return admin_.scalar_int(mariadb_table_bytes_sql("rawq\\_jobs"));
  }

  void enqueue(std::string_view payload) override {
    auto s = acquire();
    const std::string_view params[] = {payload};
    s->insert.execute(params);
  }
  std::vector<std::string> batch_forms() const override {
    return {"multi-row-insert", "bulk-execute"};
  }
  void use_batch_form(const std::string& form) override { bulk_ = form == "bulk-execute"; }
  void enqueue_batch(std::span<const std::string> payloads) override {
    auto s = acquire();
    if (bulk_) {
      std::vector<std::vector<std::string_view>> columns(1);
      columns[0].assign(payloads.begin(), payloads.end());
      s->insert.execute_bulk(columns);
      return;
    }
    std::string sql(kInsertValues);
    const std::string queue = "('" + std::string(kQueue) + "', ";
    sql.reserve(sql.size() + payloads.size() * (queue.size() + 2 * 110 + 12));
    for (std::size_t i = 0; i < payloads.size(); ++i) {
      if (i > 0) sql += ", ";
      sql += queue;
      sql += s->conn.bytes_literal(payloads[i]);
      sql += ')';
    }
    s->conn.exec(sql);
  }

  WorkerCounts work(const WorkerSetup& setup, const Handler& handler,
                    std::stop_token stop) override {
    std::optional<IdlePoller> poller;
    if (!setup.until_empty) poller.emplace(url_);
    return run_threads(setup, [&](int t, WorkerCounts& mine) {
      const std::string worker = "raw/" + std::to_string(::getpid()) + "/" + std::to_string(t);
      MdbConn conn(url_);
      std::vector<std::int64_t> ids;
      while (!stop.stop_requested()) {
        const auto lease_start = Clock::now();
        const MdbRows rows = lease(conn, setup.batch, worker, ids, mine.retries);
        setup.lease_took(lease_start);
        ++mine.leases;
        if (ids.empty()) {
          ++mine.empty_leases;
          if (setup.until_empty) return;
          poller->wait(setup.idle_wait, stop);
          continue;
        }
        for (std::size_t r = 0; r < rows.size(); ++r) handler(ids[r], rows.text(r, 1));
        complete(conn, ids, mine.retries);
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
    std::int64_t retries = 0;
    const auto t0 = Clock::now();
    lease(s->conn, max_jobs, "raw/depth", ids, retries);
    const auto t1 = Clock::now();
    if (!ids.empty()) complete(s->conn, ids, retries);
    return Cycle::timed(ids.size(), t0, t1, Clock::now());
  }

 private:
  // A session on loan from the pool (created on demand).
  class Lease {
   public:
    Lease(RawMariadbSubject& owner, std::unique_ptr<Session> s)
        : owner_(owner), session_(std::move(s)) {}
    Lease(const Lease&) = delete;
    ~Lease() {
      std::lock_guard lock(owner_.mu_);
      owner_.idle_.push_back(std::move(session_));
    }
    Session* operator->() const { return session_.get(); }

   private:
    RawMariadbSubject& owner_;
    std::unique_ptr<Session> session_;
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
    return Lease(*this, std::make_unique<Session>(url_));
  }

  const MdbUrl url_;
  MdbConn admin_;
  bool bulk_ = false;
  std::mutex mu_;
  std::vector<std::unique_ptr<Session>> idle_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<Subject> make_raw_mariadb_subject(const Target& target, int /*threads*/) {
  return std::make_unique<RawMariadbSubject>(target);
}

}  // namespace readpast::bench
