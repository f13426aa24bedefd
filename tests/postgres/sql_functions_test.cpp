// The SQL interface that `init` installs (docs/sql.md), end to end, and its interplay with
// the C++ API: a job enqueued by SQL is worked by the API and the other way round.
#include <cstdlib>

#include "pg_test_util.hpp"

namespace readpast::test {
namespace {

using SqlFunctionsTest = PostgresTest;

TEST_F(SqlFunctionsTest, EnqueuedBySqlLeasedAndCompletedByTheApi) {
  auto db = sql();
  const auto id = std::stoll(
      db.scalar("SELECT readpast.enqueue('emails', '{\"to\": \"a@example.com\"}', priority => 5, "
                "max_attempts => 3)"));
  Queue queue = open();
  auto leased = must(queue.lease({.queue = "emails", .worker_id = "api-worker"}));
  ASSERT_EQ(leased.size(), 1u);
  const Job& j = leased[0];
  EXPECT_EQ(j.id, id);
  EXPECT_EQ(j.payload, R"({"to": "a@example.com"})");
  EXPECT_EQ(j.priority, 5);
  EXPECT_EQ(j.max_attempts, 3);
  EXPECT_EQ(j.attempts, 1);
  must(queue.complete(j.id, *j.lease_token));
  EXPECT_EQ(db.scalar("SELECT state FROM readpast.jobs WHERE id = $1", {std::to_string(id)}),
            "succeeded");
}

TEST_F(SqlFunctionsTest, EnqueuedByTheApiLeasedAndCompletedBySql) {
  Queue queue = open();
  const JobId id = must(queue.enqueue(job("emails", "hello"))).id;
  auto db = sql();
  auto rows = db.query(
      "SELECT id, convert_from(payload, 'UTF8'), attempts, lease_token, leased_by, state "
      "FROM readpast.lease('emails', 'sql-worker', 10, interval '1 minute')");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(std::stoll(*rows[0][0]), id);
  EXPECT_EQ(rows[0][1], "hello");
  EXPECT_EQ(rows[0][2], "1");
  EXPECT_EQ(rows[0][4], "sql-worker");
  EXPECT_EQ(rows[0][5], "running");
  const std::string token = *rows[0][3];

  // The lease the SQL function took is the one the API sees.
  Job seen = must(queue.get(id));
  EXPECT_EQ(seen.lease_token, token_from_uuid_text(token));

  EXPECT_EQ(db.scalar("SELECT readpast.complete($1, $2)", {std::to_string(id), token}), "t");
  // Re-sent: the lease has ended, so nothing changes.
  EXPECT_EQ(db.scalar("SELECT readpast.complete($1, $2)", {std::to_string(id), token}), "f");
  EXPECT_EQ(must(queue.get(id)).state, JobState::kSucceeded);
}

TEST_F(SqlFunctionsTest, LeasedBySqlCompletedByTheApiWithTheTokenAsHex) {
  auto db = sql();
  db.scalar("SELECT readpast.enqueue('q', 'x')");
  auto rows = db.query("SELECT id, lease_token FROM readpast.lease('q', 'w')");
  ASSERT_EQ(rows.size(), 1u);
  Queue queue = open();
  const JobId id = std::stoll(*rows[0][0]);
  // The API's form of a token is the uuid's 32 hex digits.
  EXPECT_EQ(db.scalar("SELECT replace(lease_token::text, '-', '') FROM readpast.jobs"),
            token_from_uuid_text(*rows[0][1]).hex());
  must(queue.complete(id, token_from_uuid_text(*rows[0][1])));
  // The settling functions take the API's hex form, typed as text, too.
  EXPECT_EQ(db.scalar("SELECT readpast.complete($1, $2::text)",
                      {std::to_string(id), token_from_uuid_text(*rows[0][1]).hex()}),
            "f");
  auto again = queue.complete(id, token_from_uuid_text(*rows[0][1]));
  ASSERT_FALSE(again);
  EXPECT_TRUE(again.error().is_lease_lost());
}

TEST_F(SqlFunctionsTest, SettlingFunctionsTakeTheTokenAsText) {
  auto db = sql();
  const auto id = db.scalar("SELECT readpast.enqueue('q', 'x')");
  auto hex = [&] {
    return db.scalar("SELECT replace(lease_token::text, '-', '') FROM readpast.jobs");
  };
  db.query("SELECT * FROM readpast.lease('q', 'w')");
  EXPECT_EQ(db.scalar("SELECT readpast.extend($1, $2::text, interval '1 minute')", {id, hex()}),
            "t");
  EXPECT_EQ(db.scalar("SELECT readpast.release($1, $2::text)", {id, hex()}), "t");
  db.query("SELECT * FROM readpast.lease('q', 'w')");
  EXPECT_EQ(db.scalar("SELECT readpast.fail($1, $2::text, 'e', interval '0')", {id, hex()}),
            "available");
  db.query("SELECT * FROM readpast.lease('q', 'w')");
  EXPECT_EQ(db.scalar("SELECT readpast.complete($1, $2::text)", {id, hex()}), "t");
}

TEST_F(SqlFunctionsTest, LeaseHandsOutInPriorityThenRunAtThenIdOrder) {
  auto db = sql();
  const auto low = db.scalar("SELECT readpast.enqueue('q', 'low', priority => 200)");
  const auto first = db.scalar("SELECT readpast.enqueue('q', 'first')");
  const auto urgent = db.scalar("SELECT readpast.enqueue('q', 'urgent', priority => 1)");
  const auto second = db.scalar("SELECT readpast.enqueue('q', 'second')");
  const auto later = db.scalar("SELECT readpast.enqueue('q', 'later', delay => '1 hour')");
  auto rows = db.query("SELECT id FROM readpast.lease('q', 'w', 10)");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0][0], urgent);
  EXPECT_EQ(rows[1][0], first);
  EXPECT_EQ(rows[2][0], second);
  EXPECT_EQ(rows[3][0], low);
  EXPECT_EQ(db.scalar("SELECT state FROM readpast.jobs WHERE id = $1", {later}), "available");
}

TEST_F(SqlFunctionsTest, FailRetriesWithBackoffThenBuriesTheJob) {
  auto db = sql();
  const auto id = db.scalar("SELECT readpast.enqueue('q', 'x', max_attempts => 2)");
  auto token = db.scalar("SELECT lease_token FROM readpast.lease('q', 'w')");
  EXPECT_EQ(db.scalar("SELECT readpast.fail($1, $2, 'boom')", {id, token}), "available");
  // Re-sent: the lease has ended; attempts and state stay as they are.
  EXPECT_EQ(db.scalar("SELECT readpast.fail($1, $2, 'boom')", {id, token}), "");
  auto row = db.query(
      "SELECT attempts, last_error, run_at > statement_timestamp() + interval '500 ms', "
      "run_at <= statement_timestamp() + interval '1 second' FROM readpast.jobs WHERE id = $1",
      {id});
  EXPECT_EQ(row[0][0], "1");
  EXPECT_EQ(row[0][1], "boom");
  EXPECT_EQ(row[0][2], "t") << "first retry waits 1s less at most 20%";
  EXPECT_EQ(row[0][3], "t");

  db.exec("UPDATE readpast.jobs SET run_at = statement_timestamp()");
  token = db.scalar("SELECT lease_token FROM readpast.lease('q', 'w')");
  EXPECT_EQ(
      db.scalar("SELECT readpast.fail($1, $2, 'boom again', retry_after => '0')", {id, token}),
      "dead");
  EXPECT_EQ(must(open().get(std::stoll(id))).state, JobState::kDead);
}

TEST_F(SqlFunctionsTest, FailWithRetryAfterSchedulesTheRetry) {
  auto db = sql();
  const auto id = db.scalar("SELECT readpast.enqueue('q', 'x')");
  auto token = db.scalar("SELECT lease_token FROM readpast.lease('q', 'w')");
  EXPECT_EQ(
      db.scalar("SELECT readpast.fail($1, $2, 'later', retry_after => '1 hour')", {id, token}),
      "available");
  EXPECT_EQ(db.scalar("SELECT run_at - statement_timestamp() > interval '59 minutes' "
                      "FROM readpast.jobs WHERE id = $1",
                      {id}),
            "t");
}

TEST_F(SqlFunctionsTest, ExtendAndReleaseAreFencedToo) {
  auto db = sql();
  const auto id = db.scalar("SELECT readpast.enqueue('q', 'x')");
  const auto token =
      db.scalar("SELECT lease_token FROM readpast.lease('q', 'w', 1, interval '10 seconds')");
  EXPECT_EQ(db.scalar("SELECT readpast.extend($1, $2, interval '1 hour')", {id, token}), "t");
  EXPECT_EQ(db.scalar("SELECT lease_expires_at > statement_timestamp() + interval '59 minutes' "
                      "FROM readpast.jobs WHERE id = $1",
                      {id}),
            "t");
  const std::string wrong = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(db.scalar("SELECT readpast.extend($1, $2)", {id, wrong}), "f");
  EXPECT_EQ(db.scalar("SELECT readpast.release($1, $2)", {id, wrong}), "f");
  EXPECT_EQ(db.scalar("SELECT readpast.release($1, $2)", {id, token}), "t");
  EXPECT_EQ(db.scalar("SELECT state || '/' || attempts FROM readpast.jobs WHERE id = $1", {id}),
            "available/0");
}

TEST_F(SqlFunctionsTest, EnqueueManyReturnsIdsInOrderAndHonoursUniqueKeys) {
  auto db = sql();
  auto rows = db.query(
      "SELECT * FROM readpast.enqueue_many('q', ARRAY['a', 'b', 'c'], "
      "unique_keys => ARRAY[NULL, 'k', 'k'])");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_LT(std::stoll(*rows[0][0]), std::stoll(*rows[1][0]));
  EXPECT_EQ(rows[1][0], rows[2][0]) << "the second 'k' returns the holder";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs"), "2");
  auto bytes = db.query("SELECT * FROM readpast.enqueue_many('q', ARRAY['\\x00ff'::bytea])");
  ASSERT_EQ(bytes.size(), 1u);
  EXPECT_EQ(must(open().get(std::stoll(*bytes[0][0]))).payload, std::string("\0\xff", 2));
}

TEST_F(SqlFunctionsTest, UniqueKeyIsHeldByLiveJobsOnly) {
  auto db = sql();
  const auto first = db.scalar("SELECT readpast.enqueue('q', 'a', unique_key => 'daily')");
  EXPECT_EQ(db.scalar("SELECT readpast.enqueue('q', 'b', unique_key => 'daily')"), first);
  EXPECT_NE(db.scalar("SELECT readpast.enqueue('other', 'b', unique_key => 'daily')"), first);
  const auto token = db.scalar("SELECT lease_token FROM readpast.lease('q', 'w')");
  EXPECT_EQ(db.scalar("SELECT readpast.enqueue('q', 'c', unique_key => 'daily')"), first)
      << "a running job still holds its key";
  db.scalar("SELECT readpast.complete($1, $2)", {first, token});
  EXPECT_NE(db.scalar("SELECT readpast.enqueue('q', 'd', unique_key => 'daily')"), first);
}

TEST_F(SqlFunctionsTest, LeaseRescuesExpiredLeasesFirst) {
  auto db = sql();
  const auto id = db.scalar("SELECT readpast.enqueue('q', 'x')");
  const auto first = db.scalar(
      "SELECT lease_token FROM readpast.lease('q', 'crashed', 1, interval '1 millisecond')");
  std::this_thread::sleep_for(20ms);
  auto rows = db.query("SELECT id, attempts, lease_token FROM readpast.lease('q', 'w2')");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0], id);
  EXPECT_EQ(rows[0][1], "2");
  EXPECT_NE(rows[0][2], first);
  EXPECT_EQ(db.scalar("SELECT last_error FROM readpast.jobs WHERE id = $1", {id}),
            "lease expired (worker lost)");
  EXPECT_EQ(db.scalar("SELECT readpast.complete($1, $2)", {id, first}), "f")
      << "the crashed worker's token is fenced off";
}

TEST_F(SqlFunctionsTest, RunAtAndDelayCannotBothBeGiven) {
  auto db = sql();
  EXPECT_THROW(db.scalar("SELECT readpast.enqueue('q', 'x', run_at => now(), delay => '1s')"),
               std::runtime_error);
}

TEST_F(SqlFunctionsTest, BadQueueNamesAreRejectedByTheTable) {
  auto db = sql();
  EXPECT_THROW(db.scalar("SELECT readpast.enqueue('no spaces', 'x')"), std::runtime_error);
  EXPECT_THROW(db.exec("INSERT INTO readpast.jobs (queue) VALUES ('')"), std::runtime_error);
}

TEST_F(SqlFunctionsTest, APlainInsertMakesAJobTheApiCanLease) {
  // Any program can enqueue with plain SQL: every column but queue has a default.
  auto db = sql();
  db.exec("INSERT INTO readpast.jobs (queue, payload) VALUES ('q', 'plain')");
  Queue queue = open();
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].payload, "plain");
  EXPECT_EQ(leased[0].max_attempts, kDefaultMaxAttempts);
  EXPECT_EQ(leased[0].priority, kDefaultPriority);
}

TEST_F(SqlFunctionsTest, LeaseTokensAreDistinctAnd128BitsWide) {
  auto db = sql();
  db.query(
      "SELECT * FROM readpast.enqueue_many('q', array(SELECT 'x' FROM generate_series(1, 200)))");
  db.query("SELECT * FROM readpast.lease('q', 'w', 200)");
  EXPECT_EQ(db.scalar("SELECT count(DISTINCT lease_token) FROM readpast.jobs"), "200");
  // Version/variant bits of a v4 uuid are not fixed: all 128 bits vary.
  EXPECT_NE(db.scalar("SELECT count(DISTINCT substr(lease_token::text, 15, 1)) "
                      "FROM readpast.jobs"),
            "1");
}

TEST_F(SqlFunctionsTest, TheSqlLeaseFindsItsRowsByPrimaryKeyNotByScanningTheTable) {
  // Like the engine's lease (EngineTest.ALargeLease…): with max_jobs in the hundreds,
  // `j.id = picked.id` alone was planned as a hash join over a sequential scan of jobs.
  if (std::getenv("READPAST_PG_THROUGH") != nullptr) {
    GTEST_SKIP() << "counts the scans of a server session's transaction: run directly";
  }
  Queue queue = open();
  std::vector<NewJob> jobs;
  for (int i = 0; i < 20000; ++i) jobs.push_back(job("q", std::string(100, 'x')));
  must(queue.enqueue_batch(jobs));
  auto db = sql();
  db.exec("VACUUM ANALYZE readpast.live");
  // pg_stat_xact_user_tables counts this transaction's scans, without waiting for the
  // statistics to be flushed.
  db.exec("BEGIN");
  const std::string leased =
      db.scalar("SELECT count(DISTINCT lease_token) FROM readpast.lease('q', 'w', 500)");
  const std::string seq_scans = db.scalar(
      "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = 'readpast.live'::regclass");
  db.exec("COMMIT");
  EXPECT_EQ(leased, "500");
  EXPECT_EQ(seq_scans, "0") << "lease() scanned the whole live table";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs WHERE state = 'running'"), "500");
}

TEST_F(SqlFunctionsTest, ProgressIsFencedByTheTokenAndRefusesWhatIsNotJson) {
  auto db = sql();
  const auto id = db.scalar("SELECT readpast.enqueue('p', 'x')");
  auto rows = db.query("SELECT lease_token FROM readpast.lease('p', 'w')");
  ASSERT_EQ(rows.size(), 1u);
  const std::string token = *rows[0][0];
  EXPECT_EQ(db.scalar("SELECT readpast.progress($1, $2::uuid, '{\"n\": 1}')", {id, token}), "t");
  EXPECT_EQ(db.scalar("SELECT readpast.progress($1, $2::text, '[2]')",
                      {id, token_from_uuid_text(token).hex()}),
            "t");
  EXPECT_EQ(
      db.scalar("SELECT readpast.progress($1, 'ffffffffffffffffffffffffffffffff', '3')", {id}),
      "f");
  EXPECT_ANY_THROW(db.scalar("SELECT readpast.progress($1, $2::uuid, '{oops')", {id, token}));
  EXPECT_ANY_THROW(db.scalar(
      "SELECT readpast.progress($1, $2::uuid, '\"' || repeat('x', 70000) || '\"')", {id, token}));
  Queue queue = open();
  EXPECT_EQ(must(queue.get(std::stoll(id))).progress, "[2]");
}

TEST_F(SqlFunctionsTest, FailRecordsTheErrorHistory) {
  auto db = sql();
  const auto id = db.scalar("SELECT readpast.enqueue('e', 'x', max_attempts => 2)");
  auto rows = db.query("SELECT lease_token FROM readpast.lease('e', 'sql-worker')");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(
      db.scalar("SELECT readpast.fail($1, $2::uuid, 'from sql', interval '0')", {id, *rows[0][0]}),
      "available");
  Queue queue = open();
  Job job = must(queue.get(std::stoll(id)));
  ASSERT_EQ(job.errors.size(), 1u);
  EXPECT_EQ(job.errors[0].error, "from sql");
  EXPECT_EQ(job.errors[0].worker, "sql-worker");
  EXPECT_EQ(job.errors[0].attempt, 1);
}

TEST_F(SqlFunctionsTest, EnqueueWithUniqueForOpensAWindowThatOutlivesItsJob) {
  auto db = sql();
  const auto first = db.scalar(
      "SELECT readpast.enqueue('u', 'x', unique_key => 'k', unique_for => interval '1 hour')");
  auto rows = db.query("SELECT id, lease_token FROM readpast.lease('u', 'w')");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(db.scalar("SELECT readpast.complete($1, $2::uuid)", {first, *rows[0][1]}), "t");
  EXPECT_EQ(db.scalar("SELECT readpast.enqueue('u', 'y', unique_key => 'k')"), first);
  EXPECT_EQ(db.scalar("SELECT readpast.enqueue('u', 'y'::bytea, 100, NULL, NULL, 25, 'k', "
                      "interval '1 second')"),
            first);
  Queue queue = open();
  NewJob job;
  job.queue = "u";
  job.unique_key = "k";
  auto cxx = must(queue.enqueue(job));
  EXPECT_FALSE(cxx.inserted);
  EXPECT_EQ(std::to_string(cxx.id), first);
  EXPECT_ANY_THROW(db.scalar("SELECT readpast.enqueue('u', 'z', unique_for => interval '1h')"));
  // The seven-argument call of earlier releases still resolves.
  EXPECT_NO_THROW(db.scalar("SELECT readpast.enqueue('u', 'z'::bytea, 100, NULL, NULL, 25, 'k2')"));
}

// Global limits through SQL (docs/sql.md "set_limits"): set and cleared by the functions, seen
// by the API, and obeyed by readpast.lease() too.
TEST_F(SqlFunctionsTest, SetLimitsAndClearLimitsAndLeaseObeysThem) {
  Queue queue = open();
  for (int i = 0; i < 5; ++i) must(queue.enqueue(job("lim", "x")));
  auto db = sql();
  db.exec("SELECT readpast.set_limits('lim', p_running => 2)");
  db.exec(
      "SELECT readpast.set_limits('lim', p_rate_count => 100, "
      "p_rate_window => interval '1 second')");
  QueueLimits limits = must(queue.limits("lim"));
  EXPECT_EQ(limits.running, 2);
  ASSERT_TRUE(limits.rate);
  EXPECT_EQ(format_rate(*limits.rate), "100/1s");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lease('lim', 'sql-worker', 10)"), "2")
      << "the SQL lease went past the running limit";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lease('lim', 'sql-worker', 10)"), "0");
  EXPECT_TRUE(must(queue.lease({.queue = "lim", .worker_id = "w", .max_jobs = 10})).empty());
  EXPECT_THROW(db.exec("SELECT readpast.set_limits('lim', p_running => 0)"), std::runtime_error);
  EXPECT_THROW(db.exec("SELECT readpast.set_limits('lim')"), std::runtime_error);
  EXPECT_EQ(must(queue.limits("lim")).running, 2) << "a refused call changed the limits";
  db.exec("SELECT readpast.clear_limits('lim')");
  EXPECT_TRUE(must(queue.limits("lim")).empty());
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lease('lim', 'sql-worker', 10)"), "3");
}

// enqueue_after (migration 9, docs/sql.md): the engines' rules of dependencies in SQL.
TEST_F(SqlFunctionsTest, EnqueueAfterWaitsForItsDependenciesAndRefusesBadOnes) {
  auto db = sql();
  Queue queue = open();
  const auto first = db.scalar("SELECT readpast.enqueue('build', 'compile')");
  const auto waiting =
      db.scalar("SELECT readpast.enqueue_after(ARRAY[$1]::bigint[], 'deploy', 'ship')", {first});
  EXPECT_EQ(db.scalar("SELECT state FROM readpast.jobs WHERE id = $1", {waiting}), "waiting");
  EXPECT_THROW(db.scalar("SELECT readpast.enqueue_after(ARRAY[999999]::bigint[], 'deploy', 'x')"),
               std::runtime_error);
  EXPECT_THROW(
      db.scalar("SELECT readpast.enqueue_after(ARRAY[$1, $1]::bigint[], 'deploy', 'x')", {first}),
      std::runtime_error);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs"), "2") << "a refused call enqueued";

  auto leased = must(queue.lease({.queue = "build", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.complete(leased[0].id, *leased[0].lease_token));
  must(queue.resolve_dependencies());
  EXPECT_EQ(db.scalar("SELECT state FROM readpast.jobs WHERE id = $1", {waiting}), "available");
  // A dependency that already succeeded is met at once.
  const auto at_once =
      db.scalar("SELECT readpast.enqueue_after(ARRAY[$1]::bigint[], 'deploy', 'again')", {first});
  EXPECT_EQ(db.scalar("SELECT state FROM readpast.jobs WHERE id = $1", {at_once}), "available");
}

// enqueue_after's groups: members by group_name, a callback by after_group.
TEST_F(SqlFunctionsTest, EnqueueAfterJoinsAndWaitsForGroups) {
  auto db = sql();
  Queue queue = open();
  const auto member = db.scalar(
      "SELECT readpast.enqueue_after('{}'::bigint[], 'mail', 'm', group_name => 'batch')");
  const auto callback = db.scalar(
      "SELECT readpast.enqueue_after('{}'::bigint[], 'report', 'r', after_group => 'batch')");
  EXPECT_EQ(db.scalar("SELECT state FROM readpast.jobs WHERE id = $1", {callback}), "waiting");
  EXPECT_THROW(db.scalar("SELECT readpast.enqueue_after('{}'::bigint[], 'report', 'r', "
                         "after_group => 'no-such')"),
               std::runtime_error);
  auto leased = must(queue.lease({.queue = "mail", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(std::to_string(leased[0].id), member);
  must(queue.complete(leased[0].id, *leased[0].lease_token));
  must(queue.resolve_dependencies());
  EXPECT_EQ(db.scalar("SELECT state FROM readpast.jobs WHERE id = $1", {callback}), "available");
}

}  // namespace
}  // namespace readpast::test
