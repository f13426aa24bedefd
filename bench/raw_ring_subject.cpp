// The prototype of docs/postgres-storage.md in hand-written SQL (PostgreSQL only): the gate
// that design sets before the engine is rebuilt on it. The same minimal lifecycle as the
// raw-SQL ceiling (raw_subject.cpp), on storage that a held snapshot should not slow down:
//
// - available jobs in a ring of 4 `ready` partitions, running jobs in a ring of 3 `running`
//   partitions; a lease moves rows from one to the other in one statement (DELETE …
//   RETURNING into INSERT), a completion deletes the `running` row;
// - each segment is emptied by TRUNCATE once it is no longer current and holds no live row,
//   under a 20 ms lock_timeout so that it never queues behind a long reader for longer;
// - the lease scans from a frontier: the highest id taken by a lease whose snapshot has
//   settled (a later lease's pg_snapshot_xmin has passed its xmax, so every transaction it
//   could not see has ended), and from the head once every 5 s.
//
// What it leaves out of the design, because it changes correctness rather than cost: the
// marks of rows inserted with old keys, several lanes, delayed jobs, and the δ margin (ids
// here are the order, and a row's id is drawn in the statement that gives its transaction an
// xid).
//
// RING_PLAN_CACHE_MODE, when set, is the plan_cache_mode of its connections instead of
// force_generic_plan (run 25 found the median lease set by re-planning; `auto` measures that).
// RING_LEASE=function runs the lease through a PL/pgSQL function that carries its planner
// settings, with none set on the session (as behind a transaction-mode pooler).
//
// Thread-safety: as Subject's (subject.hpp). The frontier is shared by the worker threads
// under mu_; the rotation runs on a thread of its own inside work().
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "pg_client.hpp"
#include "pg_pool.hpp"
#include "run_threads.hpp"
#include "subject.hpp"

namespace readpast::bench {
namespace {

constexpr int kReadySegments = 4;
constexpr int kRunningSegments = 3;

// One transaction under an advisory lock: the drain's worker processes each open the
// subject, and two CREATE OR REPLACE FUNCTIONs at once fail ("tuple concurrently updated").
constexpr const char* kRingSchema = R"sql(
BEGIN;
SELECT pg_advisory_xact_lock(7236174);
CREATE SCHEMA IF NOT EXISTS ringq;
CREATE SEQUENCE IF NOT EXISTS ringq.ids;
-- The current segment of each ring: a sequence, read outside MVCC, so that no row is
-- updated per rotation and an old snapshot reads the current value.
CREATE SEQUENCE IF NOT EXISTS ringq.ready_cur MINVALUE 0 START 0;
CREATE SEQUENCE IF NOT EXISTS ringq.running_cur MINVALUE 0 START 0;
CREATE OR REPLACE FUNCTION ringq.ready_seg() RETURNS smallint LANGUAGE sql VOLATILE
  AS 'SELECT (last_value % 4)::smallint FROM ringq.ready_cur';
CREATE OR REPLACE FUNCTION ringq.running_seg() RETURNS smallint LANGUAGE sql VOLATILE
  AS 'SELECT (last_value % 3)::smallint FROM ringq.running_cur';
CREATE TABLE IF NOT EXISTS ringq.ready (
  seg      smallint    NOT NULL DEFAULT ringq.ready_seg(),
  id       bigint      NOT NULL DEFAULT nextval('ringq.ids'),
  queue    text        NOT NULL DEFAULT 'default',
  priority int         NOT NULL DEFAULT 0,
  run_at   timestamptz NOT NULL DEFAULT now(),
  payload  bytea       NOT NULL,
  attempts int         NOT NULL DEFAULT 0
) PARTITION BY LIST (seg);
CREATE TABLE IF NOT EXISTS ringq.ready_0 PARTITION OF ringq.ready FOR VALUES IN (0)
  WITH (autovacuum_enabled = off);
CREATE TABLE IF NOT EXISTS ringq.ready_1 PARTITION OF ringq.ready FOR VALUES IN (1)
  WITH (autovacuum_enabled = off);
CREATE TABLE IF NOT EXISTS ringq.ready_2 PARTITION OF ringq.ready FOR VALUES IN (2)
  WITH (autovacuum_enabled = off);
CREATE TABLE IF NOT EXISTS ringq.ready_3 PARTITION OF ringq.ready FOR VALUES IN (3)
  WITH (autovacuum_enabled = off);
CREATE INDEX IF NOT EXISTS ready_order ON ringq.ready (priority, id);
CREATE TABLE IF NOT EXISTS ringq.running (
  seg          smallint    NOT NULL DEFAULT ringq.running_seg(),
  id           bigint      NOT NULL,
  queue        text        NOT NULL,
  priority     int         NOT NULL,
  run_at       timestamptz NOT NULL,
  payload      bytea       NOT NULL,
  attempts     int         NOT NULL,
  locked_by    text        NOT NULL,
  locked_until timestamptz NOT NULL
) PARTITION BY LIST (seg);
CREATE TABLE IF NOT EXISTS ringq.running_0 PARTITION OF ringq.running FOR VALUES IN (0)
  WITH (autovacuum_enabled = off);
CREATE TABLE IF NOT EXISTS ringq.running_1 PARTITION OF ringq.running FOR VALUES IN (1)
  WITH (autovacuum_enabled = off);
CREATE TABLE IF NOT EXISTS ringq.running_2 PARTITION OF ringq.running FOR VALUES IN (2)
  WITH (autovacuum_enabled = off);
CREATE INDEX IF NOT EXISTS running_id ON ringq.running (id);
COMMIT;
)sql";

// The statements name the current segment once each, as an initplan, rather than through the
// column default, which runs a function per row.
constexpr const char* kRingEnqueue =
    "INSERT INTO ringq.ready (seg, queue, payload) VALUES ("
    "(SELECT (last_value % 4)::smallint FROM ringq.ready_cur), $1::text, $2::bytea) RETURNING id";
constexpr const char* kRingEnqueueBatch =
    "INSERT INTO ringq.ready (seg, queue, payload) "
    "SELECT (SELECT (last_value % 4)::smallint FROM ringq.ready_cur), $1::text, p "
    "FROM unnest($2::bytea[]) AS p RETURNING id";
// $1 max jobs, $2 worker, $3 frontier (ids above it only). Every row returns the snapshot's
// xmin and xmax, for the frontier's settling rule.
//
// The DELETE finds the picked rows by their ctid (a TID scan: one heap fetch a row) and not
// by joining on (seg, id): a segment just truncated has no statistics, the planner estimates
// it from its few pages, and for a few rows it prefers a hash join or a materialized nested
// loop over a walk of the segment's whole index to 100 probes. Planned while the current
// segment was young, that plan walked every entry the segment held, dead ones included:
// 10-25 ms a lease under a held snapshot in half of each lap of the ring (run 26,
// docs/benchmarks.md). A TID scan is the cheapest path for any estimate. The ctids are
// those of the rows this statement locked, so none can have moved; the id filter drops the
// row of another segment that happens to sit at the same ctid (ids are unique across
// segments). It is written `id + 0` so that it cannot be an index condition: as `id = ANY`,
// the planner walked a young segment's whole (priority, id) index with it rather than fetch
// 100 tuples (run 26).
constexpr const char* kRingLease =
    "WITH c AS (SELECT ctid AS t, id FROM ringq.ready WHERE priority = 0 AND id > $3::bigint "
    "ORDER BY priority, id LIMIT $1::integer FOR UPDATE SKIP LOCKED), "
    "d AS (DELETE FROM ringq.ready r WHERE r.ctid = ANY (ARRAY(SELECT t FROM c)) "
    "AND r.id + 0 = ANY (ARRAY(SELECT id FROM c)) RETURNING r.*) "
    "INSERT INTO ringq.running (seg, id, queue, priority, run_at, payload, attempts, locked_by, "
    "locked_until) SELECT (SELECT (last_value % 3)::smallint FROM ringq.running_cur), "
    "id, queue, priority, run_at, payload, attempts + 1, $2::text, "
    "now() + interval '5 minutes' FROM d "
    "RETURNING id, payload, seg::bigint, pg_snapshot_xmin(pg_current_snapshot())::text::bigint, "
    "pg_snapshot_xmax(pg_current_snapshot())::text::bigint";
// The same lease as a PL/pgSQL function with its planner settings in its definition, which
// is how the engine can keep them behind a transaction-mode pooler, where a session's SET
// does not hold (RING_LEASE=function; docs/postgres-storage.md, section 6). PL/pgSQL caches
// the statement's plan in the backend, as a prepared statement would.
std::string ring_lease_function() {
  return std::string(
             "BEGIN;\n"
             "SELECT pg_advisory_xact_lock(7236174);\n"
             "CREATE OR REPLACE FUNCTION ringq.lease(integer, text, bigint) RETURNS TABLE "
             "(o_id bigint, o_payload bytea, o_seg bigint, o_xmin bigint, o_xmax bigint) "
             "LANGUAGE plpgsql SET enable_seqscan = off SET enable_bitmapscan = off "
             "SET jit = off SET plan_cache_mode = force_generic_plan "
             "AS $f$ BEGIN RETURN QUERY ") +
         kRingLease + "; END $f$;\nCOMMIT;\n";
}
constexpr const char* kRingLeaseCall =
    "SELECT * FROM ringq.lease($1::integer, $2::text, $3::bigint)";
// $1 ids, $2 their segment (one lease's rows are in one segment unless a rotation came
// between its rows, which the engine would handle by sending each row's segment).
constexpr const char* kRingComplete =
    "DELETE FROM ringq.running WHERE seg = $2::integer AND id = ANY($1::bigint[])";

// Per process: which leases have settled, and so how far every lease may skip.
class Frontier {
 public:
  // Where the next lease starts: 0 (the head) every kHeadScanEvery, else the frontier.
  std::int64_t start() {
    std::lock_guard lock(mu_);
    const auto now = Clock::now();
    if (now - last_head_scan_ >= kHeadScanEvery) {
      last_head_scan_ = now;
      return 0;
    }
    return frontier_;
  }
  // A lease that took ids up to `highest` with a snapshot of (xmin, xmax).
  void leased(std::int64_t highest, std::int64_t xmin, std::int64_t xmax) {
    std::lock_guard lock(mu_);
    highest_ = std::max(highest_, highest);
    // Every pending lease whose xmax this snapshot's xmin has passed has settled.
    while (!pending_.empty() && pending_.front().xmax <= xmin) {
      frontier_ = std::max(frontier_, pending_.front().highest);
      pending_.pop_front();
    }
    pending_.push_back(Pending{highest, xmax});
    // Leases finish out of xmax order across threads; keeping the list sorted by xmax
    // settles each as soon as its own xmax is passed.
    std::sort(pending_.begin(), pending_.end(),
              [](const Pending& a, const Pending& b) { return a.xmax < b.xmax; });
  }
  // How far the frontier is behind the newest id leased, and how many leases wait to settle.
  nlohmann::json notes() {
    std::lock_guard lock(mu_);
    return {{"frontier_lag", highest_ - frontier_}, {"unsettled_leases", pending_.size()}};
  }

 private:
  static constexpr auto kHeadScanEvery = std::chrono::seconds(5);
  struct Pending {
    std::int64_t highest;
    std::int64_t xmax;
  };
  std::mutex mu_;
  std::int64_t frontier_ = 0;           // guarded by mu_
  std::int64_t highest_ = 0;            // guarded by mu_: the highest id any lease took
  std::deque<Pending> pending_;         // guarded by mu_
  Clock::time_point last_head_scan_{};  // guarded by mu_
};

// Rotates and truncates both rings; one turn a second, on its own connection (the
// maintenance turn of the design, here one per process: the benchmark runs one).
class Rotator {
 public:
  struct Counts {
    std::atomic<std::int64_t> truncations{0};
    std::atomic<std::int64_t> lock_timeouts{0};
  };
  Rotator(const std::string& conninfo, Counts& counts) : conn_(conninfo), counts_(counts) {}

  void turn() {
    ring(ready_, "ringq.ready_", "ringq.ready_cur", kReadySegments, /*evacuate=*/false);
    ring(running_, "ringq.running_", "ringq.running_cur", kRunningSegments, /*evacuate=*/true);
  }

 private:
  struct Ring {
    std::array<bool, 4> free{true, true, true, true};
    std::array<Clock::time_point, 4> left{};  // when each stopped being current
    int current = 0;
    Clock::time_point since = Clock::now();
  };
  static constexpr auto kRotateEvery = std::chrono::seconds(10);
  static constexpr auto kQuietFor = std::chrono::seconds(5);

  void ring(Ring& r, const std::string& table, const std::string& sequence, int segments,
            bool evacuate) {
    const auto now = Clock::now();
    if (now - r.since >= kRotateEvery) {
      for (int step = 1; step < segments; ++step) {
        const int next = (r.current + step) % segments;
        if (!r.free[static_cast<std::size_t>(next)]) continue;
        conn_.exec("SELECT setval('" + sequence + "', " + std::to_string(next) + ")");
        r.free[static_cast<std::size_t>(r.current)] = false;
        r.left[static_cast<std::size_t>(r.current)] = now;
        r.free[static_cast<std::size_t>(next)] = false;
        r.current = next;
        r.since = now;
        break;
      }
    }
    for (int s = 0; s < segments; ++s) {
      const auto i = static_cast<std::size_t>(s);
      if (s == r.current || r.free[i] || now - r.left[i] < kQuietFor) continue;
      const std::string name = table + std::to_string(s);
      try {
        conn_.exec("BEGIN");
        conn_.exec("SET LOCAL lock_timeout = '20ms'");
        conn_.exec("LOCK TABLE " + name + " IN ACCESS EXCLUSIVE MODE");
        if (evacuate) {
          conn_.exec("UPDATE ringq.running SET seg = " + std::to_string(r.current) +
                     " WHERE seg = " + std::to_string(s));
        }
        if (conn_.scalar("SELECT EXISTS (SELECT 1 FROM " + name + ")") == "t") {
          conn_.exec("ROLLBACK");
          continue;
        }
        conn_.exec("TRUNCATE " + name);
        conn_.exec("COMMIT");
        r.free[i] = true;
        ++counts_.truncations;
      } catch (const BenchError&) {
        ++counts_.lock_timeouts;
        conn_.exec("ROLLBACK");
      }
    }
  }

  PgConn conn_;
  Counts& counts_;
  Ring ready_;
  Ring running_;
};

class RawRingSubject final : public Subject {
 public:
  RawRingSubject(const Target& target, int threads)
      : conninfo_(target.pg_url),
        admin_(conninfo_),
        pool_(conninfo_, std::clamp(threads, 1, 8), prepare_statements) {
    admin_.exec(kRingSchema);
    if (lease_in_function()) admin_.exec(ring_lease_function());
  }

  std::string system() const override { return "raw-ring"; }
  std::string describe() const override {
    return "prototype of docs/postgres-storage.md (bench/raw_ring_subject.cpp): rings of 4 "
           "ready and 3 running partitions rotated every 10 s and truncated, a settled-lease "
           "frontier with a head scan every 5 s; lease" +
           std::string(lease_in_function() ? " (in a PL/pgSQL function, RING_LEASE=function)"
                                           : "") +
           ": " + kRingLease + "; complete: " + kRingComplete;
  }

  void reset() override {
    admin_.exec("TRUNCATE ringq.ready, ringq.running");
    admin_.exec("SELECT setval('ringq.ready_cur', 0), setval('ringq.running_cur', 0)");
  }
  void prefill(std::int64_t n) override {
    for (std::int64_t from = 1; from <= n; from += 1'000'000) {
      const std::int64_t to = std::min(n, from + 999'999);
      admin_.exec(
          "INSERT INTO ringq.ready (queue, payload) SELECT 'bench', convert_to("
          "'{\"seq\":' || i || '}', 'UTF8') FROM generate_series(" +
          std::to_string(from) + ", " + std::to_string(to) + ") AS i");
    }
  }
  void settle() override {
    admin_.exec("VACUUM ANALYZE ringq.ready, ringq.running");
    admin_.exec("CHECKPOINT");
  }
  std::int64_t unfinished() override {
    return admin_.scalar_int(
        "SELECT (SELECT count(*) FROM ringq.ready) + (SELECT count(*) FROM ringq.running)");
  }
  std::optional<std::int64_t> storage_bytes() override {
    return admin_.scalar_int(pg_schema_bytes_sql("ringq"));
  }

  void enqueue(std::string_view payload) override {
    auto c = acquire();
    c->run("enqueue", PgParams().bytes(kQueue).bytes(payload));
  }
  void enqueue_batch(std::span<const std::string> payloads) override {
    auto c = acquire();
    c->run("enqueue_batch", PgParams().bytes(kQueue).bytea_array(payloads));
  }

  WorkerCounts work(const WorkerSetup& setup, const Handler& handler,
                    std::stop_token stop) override {
    std::jthread rotation([this](std::stop_token own) {
      Rotator rotator(conninfo_, rotation_counts_);
      while (!own.stop_requested()) {
        rotator.turn();
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    });
    return run_threads(setup, [&](int t, WorkerCounts& mine) {
      const std::string worker = "ring/" + std::to_string(t);
      std::vector<std::int64_t> ids;
      while (!stop.stop_requested()) {
        ids.clear();
        int seg = 0;
        {
          auto c = acquire();
          const auto lease_start = Clock::now();
          auto rows =
              c->run("lease", PgParams().int4(setup.batch).bytes(worker).int8(frontier_.start()));
          setup.lease_took(lease_start);
          ++mine.leases;
          const int n = PQntuples(rows.get());
          std::int64_t highest = 0;
          for (int r = 0; r < n; ++r) {
            ids.push_back(pg_int8(rows.get(), r, 0));
            highest = std::max(highest, ids.back());
            handler(ids.back(), pg_bytes(rows.get(), r, 1));
          }
          if (n > 0) {
            seg = static_cast<int>(pg_int8(rows.get(), 0, 2));
            frontier_.leased(highest, pg_int8(rows.get(), 0, 3), pg_int8(rows.get(), 0, 4));
          }
        }
        if (ids.empty()) {
          ++mine.empty_leases;
          if (setup.until_empty) return;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
          continue;
        }
        {
          auto c = acquire();
          c->run("complete", PgParams().int8_array(ids).int4(seg));
        }
        mine.completed += static_cast<std::int64_t>(ids.size());
        if (setup.completed != nullptr) {
          setup.completed->fetch_add(static_cast<std::int64_t>(ids.size()));
        }
      }
    });
  }

  nlohmann::json window_notes() override {
    nlohmann::json notes = frontier_.notes();
    notes["truncations"] = rotation_counts_.truncations.load();
    notes["truncate_lock_timeouts"] = rotation_counts_.lock_timeouts.load();
    return notes;
  }

  Cycle lease_cycle(int max_jobs) override {
    auto c = acquire();
    auto t0 = Clock::now();
    auto rows = c->run("lease", PgParams().int4(max_jobs).bytes("ring/depth").int8(0));
    auto t1 = Clock::now();
    std::vector<std::int64_t> ids;
    for (int r = 0; r < PQntuples(rows.get()); ++r) ids.push_back(pg_int8(rows.get(), r, 0));
    if (!ids.empty()) {
      c->run("complete",
             PgParams().int8_array(ids).int4(static_cast<int>(pg_int8(rows.get(), 0, 2))));
    }
    return Cycle::timed(ids.size(), t0, t1, Clock::now());
  }

 private:
  PgPool::Loan acquire() { return pool_.acquire(); }

  static bool lease_in_function() {
    const char* lease = std::getenv("RING_LEASE");
    return lease != nullptr && std::string_view(lease) == "function";
  }

  static void prepare_statements(PgConn& conn) {
    // With the lease in a function nothing is set on the session, as behind a pooler: the
    // function carries its settings.
    if (!lease_in_function()) set_planner(conn);
    conn.prepare("enqueue", kRingEnqueue);
    conn.prepare("enqueue_batch", kRingEnqueueBatch);
    conn.prepare("lease", lease_in_function() ? kRingLeaseCall : kRingLease);
    conn.prepare("complete", kRingComplete);
  }

  static void set_planner(PgConn& conn) {
    // A segment is often empty when a statement is planned, and the planner, which then
    // sees no reason for an index, would keep a sequential scan of it in the cached plan
    // for when it holds 100,000 rows. Segments have no statistics of their own (no
    // autovacuum), so the prototype simply never scans one whole. (The costs that setting
    // gives other plans would start JIT compilation, 50 ms a statement: off too.)
    conn.exec("SET enable_seqscan = off");
    conn.exec("SET jit = off");
    // For the same reason, the ordered index walk from the frontier must not give way to a
    // bitmap scan of everything past it and a sort, which the planner prefers for a segment
    // it believes holds a few rows (run 26).
    conn.exec("SET enable_bitmapscan = off");
    // With plans whose shape no estimate can change, the generic one is safe to keep, and
    // keeping it spares the re-planning that run 25 found setting the median lease (in
    // `auto` mode the plan cache weighs the generic plan against custom ones by estimates
    // that follow the ring's lap).
    const char* mode = std::getenv("RING_PLAN_CACHE_MODE");
    conn.exec(std::string("SET plan_cache_mode = ") +
              (mode != nullptr ? mode : "force_generic_plan"));
  }

  const std::string conninfo_;
  PgConn admin_;
  PgPool pool_;
  Frontier frontier_;
  Rotator::Counts rotation_counts_;
};

}  // namespace

std::unique_ptr<Subject> make_raw_ring_subject(const Target& target, int threads) {
  if (target.engine != EngineKind::kPostgres) fail("the ring prototype is PostgreSQL only");
  return std::make_unique<RawRingSubject>(target, threads);
}

}  // namespace readpast::bench
