// What only a server engine has to prove: a lease never waits on rows another session
// holds locked; every hot path's statement uses its partial index; URLs in libpq's
// keyword form work; an idle worker still finds jobs whose NOTIFY never came (as behind a
// transaction-mode pooler, or from a session with triggers off).
#include <libpq-fe.h>

#include <future>
#include <set>

#include "engines/postgres/postgres_sql.hpp"
#include "pg_test_util.hpp"
#include "readpast/worker.hpp"

namespace readpast::test {
namespace {

using EngineTest = PostgresTest;

TEST_F(EngineTest, ALeaseSkipsRowsAnotherSessionHoldsLockedInsteadOfWaiting) {
  Queue queue = open();
  const JobId first = must(queue.enqueue(job("q", "first"))).id;
  const JobId second = must(queue.enqueue(job("q", "second"))).id;
  SqlConnection locker(url());
  locker.exec("BEGIN");
  // The live table: FOR UPDATE through the jobs view locks no row (docs/postgres.md).
  locker.query("SELECT id FROM readpast.live WHERE id = $1 FOR UPDATE", {std::to_string(first)});

  const auto started = std::chrono::steady_clock::now();
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 2}));
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(leased.size(), 1u) << "the locked row was handed out, or waited for";
  EXPECT_EQ(leased[0].id, second);
  EXPECT_LT(took, 2s) << "the lease waited on the locked row";

  // Every due job locked: wait_for_work says "look again" soon, without spinning.
  const auto waiting = std::chrono::steady_clock::now();
  EXPECT_TRUE(must(queue.wait_for_work("q", 5s)));
  const auto waited = std::chrono::steady_clock::now() - waiting;
  EXPECT_GE(waited, 20ms) << "a caller's loop would spin";
  EXPECT_LT(waited, 1s);

  locker.exec("ROLLBACK");
  auto after = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].id, first);
}

// EXPLAIN of one statement with seq scans disabled: the index it is meant to use must be
// the one the planner picks.
std::string plan_of(SqlConnection& db, const std::string& sql, const std::vector<Value>& params) {
  std::string plan;
  for (const auto& row : db.query("EXPLAIN " + sql, params)) plan += *row[0] + "\n";
  return plan;
}

// The plans of every statement one call runs, those inside functions included (the lease is
// lease_head_walk(), whose plan EXPLAIN of the call does not show): auto_explain's, which a
// session at client_min_messages = log receives as notices.
class NestedPlans {
 public:
  explicit NestedPlans(const std::string& url) : db_(url) {
    PQsetNoticeReceiver(db_.get(), &NestedPlans::receive, &text_);
    db_.exec("LOAD 'auto_explain'");
    db_.exec("SET auto_explain.log_min_duration = 0");
    db_.exec("SET auto_explain.log_nested_statements = on");
    db_.exec("SET client_min_messages = log");
  }
  SqlConnection& db() { return db_; }
  std::string of(const std::string& sql, const std::vector<Value>& params) {
    text_.clear();
    db_.query(sql, params);
    return text_;
  }

 private:
  static void receive(void* text, const PGresult* result) {
    static_cast<std::string*>(text)->append(PQresultErrorMessage(result));
  }
  std::string text_;  // declared before db_: the receiver writes here until db_ closes
  SqlConnection db_;
};

TEST_F(EngineTest, EveryHotPathUsesItsPartialIndex) {
  Queue queue = open();
  std::vector<NewJob> jobs;
  for (int i = 0; i < 2000; ++i) jobs.push_back(job("q"));
  must(queue.enqueue_batch(jobs));
  SqlConnection db(url());
  db.exec("ANALYZE readpast.live");
  db.exec("SET enable_seqscan = off");
  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  // The lease, in lease_head_walk(): $1 queue, $2 worker, $3 lease in µs, $4 tokens, $5 batch.
  NestedPlans plans(url());
  const std::string lease = plans.of(sql.lease.sql, {"q", "w", "30000000", "{}", "10"});
  EXPECT_NE(lease.find("Index Scan using jobs_lease_idx"), std::string::npos) << lease;
  // Its walk starts at the first job its guard found (migration 16), as an index bound.
  EXPECT_NE(lease.find("ROW(priority, run_at, id) >= ROW("), std::string::npos) << lease;
  EXPECT_EQ(lease.find("Sort"), std::string::npos) << lease;
  EXPECT_EQ(lease.find("Seq Scan on live"), std::string::npos) << lease;
  // From the head, and from where the process' frontiers say (lease_frontier.hpp).
  for (const Value& after : {Value(), Value("2026-01-01T00:00:00Z")}) {
    // Rescue reads the expiry index of each segment of the running ring (migration 23), merged.
    const std::string rescue = plan_of(db, sql.rescue.sql, {"q", after, "5000"});
    EXPECT_NE(rescue.find("Merge Append"), std::string::npos) << rescue;
    for (const char* segment : {"running_0", "running_1", "running_2"}) {
      EXPECT_NE(rescue.find(std::string(segment) + "_queue_lease_expires_at_idx"),
                std::string::npos)
          << rescue;
    }
    const std::string due = plans.of(sql.next_due.sql, {"q", after});
    EXPECT_NE(due.find("Scan using jobs_lease_idx"), std::string::npos) << due;
    EXPECT_EQ(due.find("Sort"), std::string::npos) << due;
    EXPECT_EQ(due.find("Bitmap"), std::string::npos) << due;
  }
  const std::string purge =
      plan_of(db, sql.purge.sql, {"q", "succeeded", "2030-01-01T00:00:00Z", "1000"});
  EXPECT_NE(purge.find("jobs_finished_idx"), std::string::npos) << purge;
  const std::string holder = plan_of(db, sql.unique_holder.sql, {"q", "k"});
  EXPECT_NE(holder.find("unique_keys_pkey"), std::string::npos) << holder;
}

// The settles find each row by a probe of the running segments' primary keys, whatever the
// statistics say (sql/statements.sql, complete). Here the statistics are those a held snapshot
// leaves: ANALYZE, under another session's snapshot, of a segment whose 30,000 jobs have all
// been settled, finds no live row in hundreds of pages, while the indexes still hold an entry
// for every one of them. The plain form of the statements, kept here for contrast, then reads
// all of the primary key and joins each entry to the batch, as it did in run 37.
TEST_F(EngineTest, SettlesProbeThePrimaryKeyWhateverTheStatisticsSay) {
  SqlConnection db(url());
  SqlConnection holder(url());
  holder.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
  holder.exec("SELECT count(*) FROM pg_class");
  const std::string leased =
      "INSERT INTO readpast.running (id, queue, lease_token, lease_expires_at, started_at, "
      "attempts) SELECT nextval('readpast.jobs_id_seq'), 'q', gen_random_uuid(), "
      "now() + interval '1 hour', now(), 1 FROM generate_series(1, ";
  db.exec(leased + "30000)");
  db.exec("DELETE FROM readpast.running");
  db.exec("ANALYZE readpast.running");
  db.exec(leased + "150)");
  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  const std::string ids = db.scalar("SELECT array_agg(id)::text FROM readpast.running");
  const std::string tokens = db.scalar("SELECT array_agg(lease_token)::text FROM readpast.running");
  db.exec("SET plan_cache_mode = force_generic_plan");  // as the engine's cached plans are
  auto generic_plan = [&](const std::string& name, const std::string& statement,
                          const std::string& types, const std::vector<Value>& params) {
    db.exec("PREPARE " + name + types + " AS " + statement);
    // Literals: EXPLAIN EXECUTE takes no parameters of its own. The values are numbers and
    // uuids read back from the database.
    std::string execute = "EXPLAIN EXECUTE " + name + "(";
    for (std::size_t i = 0; i < params.size(); ++i) execute += (i ? ", '" : "'") + *params[i] + "'";
    std::string plan;
    for (const auto& row : db.query(execute + ")")) plan += *row[0] + "\n";
    return plan;
  };
  const std::vector<std::pair<std::string, std::string>> settles = {
      {"complete", generic_plan("c", sql.complete.sql, "(bigint[], uuid[])", {ids, tokens})},
      {"extend",
       generic_plan("e", sql.extend.sql, "(bigint, bigint[], uuid[])", {"30000000", ids, tokens})},
      {"release",
       generic_plan("r", sql.release.sql, "(bigint, bigint[], uuid[])", {"0", ids, tokens})},
      {"held", generic_plan("h", sql.held.sql, "(bigint[], uuid[])", {ids, tokens})}};
  for (const auto& [name, plan] : settles) {
    EXPECT_NE(plan.find("Index Cond: (id = ANY (ARRAY["), std::string::npos) << name << ":\n"
                                                                             << plan;
    EXPECT_EQ(plan.find("expires_at_idx"), std::string::npos) << name << ":\n" << plan;
  }
  // complete_delete() (migration 20) reads the batch in one scan of the primary key and matches
  // the tokens by hash; its plan is inside the function, where EXPLAIN of the call does not
  // look.
  NestedPlans plans(url());
  plans.db().exec("BEGIN");
  const std::string deleted = plans.of(sql.complete_delete.sql, {ids, tokens});
  plans.db().exec("ROLLBACK");
  EXPECT_NE(deleted.find("Index Scan using running_0_pkey on running_0 j"), std::string::npos)
      << deleted;
  EXPECT_NE(deleted.find("Index Cond: (id = ANY ($1))"), std::string::npos) << deleted;
  EXPECT_NE(deleted.find("Hash Cond: ((j.id = r.id) AND (j.lease_token = r.token))"),
            std::string::npos)
      << deleted;
  EXPECT_EQ(deleted.find("Seq Scan"), std::string::npos) << deleted;
  EXPECT_EQ(deleted.find("expires_at_idx"), std::string::npos) << deleted;
  // The plain form they had: with these statistics it reads all of the primary key and joins
  // each entry to the batch, instead of probing for each id.
  const std::string plain = generic_plan(
      "plain",
      "DELETE FROM readpast.running j USING unnest($1, $2) AS r(id, token) WHERE j.id = r.id "
      "AND j.lease_token = r.token AND j.notify IS NOT TRUE "
      "RETURNING j.id, r.token",
      "(bigint[], uuid[])", {ids, tokens});
  EXPECT_EQ(plain.find("Index Cond: (id = r.id)"), std::string::npos)
      << "these statistics no longer mislead the plain form, so this test proves nothing:\n"
      << plain;
  holder.exec("COMMIT");
}

// The lease walks jobs_lease_idx in hand-out order whatever the statistics say. Here they are
// those of a queue analysed while nearly empty: a drained backlog, its few remaining jobs
// mostly leased, in a table and indexes of many pages. A backlog builds after the ANALYZE.
// The planner then expected about one job, and the plain statement the lease was until
// schema 13, kept here for contrast, read and sorted the whole backlog on every call (the
// baseline of run 39 fell from 39,000 to 4,000 jobs/s until the next ANALYZE).
TEST_F(EngineTest, ALeaseWalksTheQueueInOrderWhateverTheStatisticsSay) {
  Queue queue = open();
  SqlConnection db(url());
  // No autovacuum: its ANALYZE would correct the statistics this test depends on.
  db.exec("ALTER TABLE readpast.live SET (autovacuum_enabled = false)");
  db.exec("INSERT INTO readpast.live (queue) SELECT 'q' FROM generate_series(1, 200000)");
  // Leased jobs leave live (for running since migration 23): 30 stay available at its end.
  db.exec("DELETE FROM readpast.live WHERE id <= (SELECT max(id) - 30 FROM readpast.live)");
  db.exec("VACUUM ANALYZE readpast.live");
  std::vector<NewJob> backlog;
  for (int i = 0; i < 20000; ++i) backlog.push_back(job("q"));
  must(queue.enqueue_batch(backlog));

  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  NestedPlans plans(url());
  plans.db().exec("BEGIN");
  const std::string lease = plans.of(sql.lease.sql, {"q", "w", "30000000", "{}", "10"});
  plans.db().exec("ROLLBACK");
  EXPECT_NE(lease.find("Index Scan using jobs_lease_idx"), std::string::npos) << lease;
  EXPECT_EQ(lease.find("Bitmap"), std::string::npos) << lease;
  EXPECT_EQ(lease.find("Sort"), std::string::npos) << lease;

  // The plain form, as the engine prepared it before schema 13 (a generic plan, the batch size
  // in its text), its guard the plain min() that schema 16's first_run_at() replaces: it sorts
  // the queue, or reads the whole table for the guard.
  db.exec("SET plan_cache_mode = force_generic_plan");
  db.exec(
      "PREPARE plain(text) AS SELECT j.id FROM readpast.live j "
      "WHERE j.queue = $1 AND j.state = 'available' AND j.run_at <= statement_timestamp() "
      "AND (SELECT min(d.run_at) FROM readpast.live d WHERE d.queue = $1 "
      "AND d.state = 'available') <= statement_timestamp() "
      "ORDER BY j.priority, j.run_at, j.id LIMIT 10 FOR UPDATE SKIP LOCKED");
  const std::string plain = plan_of(db, "EXECUTE plain('q')", {});
  EXPECT_TRUE(plain.find("Sort") != std::string::npos ||
              plain.find("Seq Scan") != std::string::npos)
      << "these statistics no longer mislead the plain form, so this test proves nothing:\n"
      << plain;

  // And the lease still hands out the first jobs in hand-out order.
  std::vector<std::string> first;
  for (const auto& row : db.query("SELECT id FROM readpast.live WHERE state = 'available' "
                                  "ORDER BY priority, run_at, id LIMIT 10")) {
    first.push_back(*row[0]);
  }
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 10}));
  ASSERT_EQ(leased.size(), first.size());
  for (std::size_t i = 0; i < leased.size(); ++i) EXPECT_EQ(std::to_string(leased[i].id), first[i]);
}

// The lease the engine calls, lease_head_walk(), returns its jobs and then one row without an
// id: the pages of the two indexes it read. lease_head(), which the SQL interface's lease() and
// workers of schema 13 call, returns the jobs alone, as it did (migration 14).
TEST_F(EngineTest, TheLeaseSaysHowFarItWalkedInARowAfterItsJobsAndTheOldCallReturnsJobsAlone) {
  Queue queue = open();
  std::vector<NewJob> jobs(20, job("q"));
  must(queue.enqueue_batch(jobs));
  SqlConnection db(url());
  const auto walk = db.query(
      "SELECT id, walked_pages FROM readpast.lease_head_walk('q', 'w', 30000000, '{}', 5)");
  ASSERT_EQ(walk.size(), 6u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_TRUE(walk[i][0].has_value());
    EXPECT_FALSE(walk[i][1].has_value()) << "a job row carries a walk";
  }
  EXPECT_FALSE(walk[5][0].has_value()) << "the last row is a job";
  ASSERT_TRUE(walk[5][1].has_value());
  EXPECT_GT(std::stoll(*walk[5][1]), 0) << "a lease that read both indexes counted no page";
  const auto old = db.query("SELECT id FROM readpast.lease_head('q', 'w', 30000000, '{}', 5)");
  ASSERT_EQ(old.size(), 5u);
  for (const auto& row : old)
    EXPECT_TRUE(row[0].has_value()) << "lease_head() returned a row without an id";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lease('q', 'w', 5)"), "5");
}

// The entries earlier leases left at the head of jobs_lease_idx (dead, until vacuum) are read
// once a lease: by its guard, which finds the first job, and the walk starts there (migration
// 16). Before, the guard read them in jobs_due_idx and the walk again in jobs_lease_idx.
// A lease of many jobs joins the rows it updates to the rows it picked by a hash join, whatever
// the statistics say: analysed while empty (a fresh install, a truncated table), both sides
// are estimated at one row, and a nested loop would read the whole pick for every row it
// updates, a quadratic cost (a lease of 1,000 at 117 ms instead of 13; migration 18).
TEST_F(EngineTest, ALeaseOfManyJobsHashesItsPickWhateverTheStatisticsSay) {
  Queue queue = open();
  SqlConnection db(url());
  db.exec("ALTER TABLE readpast.live SET (autovacuum_enabled = false)");
  db.exec("ANALYZE readpast.live");
  std::vector<NewJob> backlog(3000, job("q"));
  must(queue.enqueue_batch(backlog));
  db.exec("SELECT readpast.set_limits('limited', 10000, NULL, NULL)");
  must(queue.enqueue_batch(std::vector<NewJob>(3000, job("limited"))));

  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  std::string tokens = "{";
  for (int i = 0; i < 1000; ++i) {
    tokens += (i > 0 ? "," : "") + db.scalar("SELECT gen_random_uuid()");
  }
  tokens += "}";
  NestedPlans plans(url());
  plans.db().exec("BEGIN");
  const std::string head = plans.of(sql.lease.sql, {"q", "w", "30000000", tokens, "1000"});
  const std::string lanes =
      plans.of(sql.lease_lanes.sql,
               {"q", "w", "30000000", tokens, "0", "{100}", "{NULL}", "{NULL}", "{NULL}", "1000"});
  const std::string limited =
      plans.of(sql.lease_limited.sql, {"limited", "w", "1000", "30000000", tokens});
  plans.db().exec("ROLLBACK");
  for (const std::string* plan : {&head, &lanes, &limited}) {
    EXPECT_NE(plan->find("Hash Join"), std::string::npos) << *plan;
    EXPECT_EQ(plan->find("Join Filter: (j_1.id = picked.id)"), std::string::npos) << *plan;
  }
}

TEST_F(EngineTest, ALeaseFromTheHeadReadsTheDeadHeadOnce) {
  Queue queue = open();
  SqlConnection db(url());
  db.exec("ALTER TABLE readpast.live SET (autovacuum_enabled = false)");
  std::vector<NewJob> jobs(20001, job("q"));
  must(queue.enqueue_batch(jobs));
  complete_in_leases_of_1000(queue, "q", 20000);
  const std::string fetched =
      "SELECT pg_stat_get_xact_blocks_fetched('readpast.jobs_lease_idx'::regclass)";
  db.exec("BEGIN");
  const long before = std::stol(db.scalar(fetched));
  db.exec(
      "SELECT d.id FROM readpast.live d WHERE d.queue = 'q' AND d.state = 'available' "
      "ORDER BY d.priority, d.run_at, d.id LIMIT 1");
  const long head = std::stol(db.scalar(fetched)) - before;
  db.exec("COMMIT");
  const auto walk = db.query(
      "SELECT id, walked_pages FROM readpast.lease_head_walk('q', 'w', 30000000, '{}', 1)");
  ASSERT_EQ(walk.size(), 2u);
  const long walked = std::stol(*walk[1][1]);
  EXPECT_GT(head, 50) << "20,000 dead entries were not at the head to read";
  EXPECT_GE(walked, head);
  EXPECT_LT(walked, head + 10) << "the head was read more than once";
}

// A settle of one job keeps its generic plan: PostgreSQL plans a prepared statement anew on
// every call while its generic plan looks dearer than a custom one plus the planning, which
// unnest()'s estimate of ten rows made it for one-job batches (run 37: 0.77 of the one-job
// drains). Under `LIMIT cardinality(ids)` it costs one. (complete_delete() keeps a generic
// plan by its own setting, plan_cache_mode, migration 20.)
TEST_F(EngineTest, TheSettlesOfOneJobKeepAGenericPlan) {
  Queue queue = open();
  std::vector<NewJob> jobs;
  for (int i = 0; i < 2000; ++i) jobs.push_back(job("q"));
  must(queue.enqueue_batch(jobs));
  must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 8}));
  SqlConnection db(url());
  db.exec("VACUUM ANALYZE readpast.live");
  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  const std::string one = "('{1}', '{00000000-0000-0000-0000-000000000000}')";
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"complete", sql.complete.sql}, {"held", sql.held.sql}}) {
    db.exec("PREPARE " + name + "(bigint[], uuid[]) AS " + text);
    // Five custom plans first; then PostgreSQL compares.
    for (int i = 0; i < 6; ++i) db.exec("EXECUTE " + name + one);
    std::string plan;
    for (const auto& row : db.query("EXPLAIN (VERBOSE) EXECUTE " + name + one))
      plan += *row[0] + "\n";
    EXPECT_NE(plan.find("unnest($1)"), std::string::npos) << name << " is planned on every call:\n"
                                                          << plan;
  }
}

TEST_F(EngineTest, ALargeLeaseFindsItsRowsByPrimaryKeyNotByScanningTheTable) {
  // With a LIMIT of hundreds and a table of a few thousand pages, PostgreSQL costs a hash
  // join over a sequential scan below one primary-key probe per row; the lease then read
  // every job of the table to update 500 of them.
  Queue queue = open();
  std::vector<NewJob> jobs;
  for (int i = 0; i < 20000; ++i) jobs.push_back(job("q", std::string(100, 'x')));
  must(queue.enqueue_batch(jobs));
  SqlConnection db(url());
  db.exec("VACUUM ANALYZE readpast.live");
  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  NestedPlans plans(url());
  for (int max_jobs : {1, 100, 500, 1000}) {
    // Each rolled back, so that every size meets the same queue.
    plans.db().exec("BEGIN");
    const std::string lease =
        plans.of(sql.lease.sql, {"q", "w", "30000000", "{}", std::to_string(max_jobs)});
    plans.db().exec("ROLLBACK");
    EXPECT_EQ(lease.find("Seq Scan"), std::string::npos) << max_jobs << " jobs:\n" << lease;
    EXPECT_NE(lease.find("live_pkey"), std::string::npos) << max_jobs << " jobs:\n" << lease;
  }
  // And the lease itself still hands out each job once, in order, with its own token.
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 500}));
  ASSERT_EQ(leased.size(), 500u);
  std::set<std::string> tokens;
  for (std::size_t i = 0; i < leased.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(leased[i - 1].id, leased[i].id);
    }
    tokens.insert(leased[i].lease_token->hex());
  }
  EXPECT_EQ(tokens.size(), 500u);
}

TEST_F(EngineTest, UrlsInLibpqKeywordFormWork) {
  // postgresql://postgres@127.0.0.1:PORT/DB?... → host=... port=... dbname=... user=...
  PGconn* probe = PQconnectdb(url().c_str());
  ASSERT_EQ(PQstatus(probe), CONNECTION_OK);
  const std::string keywords = std::string("host=") + PQhost(probe) + " port=" + PQport(probe) +
                               " dbname=" + PQdb(probe) + " user=" + PQuser(probe);
  PQfinish(probe);
  Queue queue = must(Queue::open(keywords));
  const JobId id = must(queue.enqueue(job("kw"))).id;
  auto leased = must(queue.lease({.queue = "kw", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, id);
}

TEST_F(EngineTest, AnIdleWorkerFindsJobsWhoseNotificationNeverCame) {
  Queue queue = open();
  std::atomic<bool> ran{false};
  Worker worker(queue, WorkerOptions{.worker_id = "poller", .idle_wait_max = 300ms});
  ASSERT_TRUE(worker.handle("q", [&](const Job&, std::stop_token) {
    ran = true;
    return JobResult::success();
  }));
  auto running = std::async(std::launch::async, [&] { return worker.run(); });
  std::this_thread::sleep_for(500ms);  // idle, listening
  // Triggers off for this session: no NOTIFY, as if a pooler had eaten it. Into the live
  // table: the jobs view inserts through a trigger, which this setting turns off too.
  SqlConnection producer(url());
  producer.exec("SET session_replication_role = replica");
  producer.exec("INSERT INTO readpast.live (queue) VALUES ('q')");
  const auto inserted = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually([&] { return ran.load(); }, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - inserted, 2s)
      << "polling did not find the job within its idle wait";
  worker.stop();
  ASSERT_TRUE(running.get());
}

}  // namespace
}  // namespace readpast::test
