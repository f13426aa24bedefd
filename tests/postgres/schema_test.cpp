// The schema: `init` creates it (concurrently safe, idempotent), in the PostgreSQL schema
// the URL names (?schema=), and refuses versions it does not know. Plus PostgreSQL details
// of the engine: text it records is made valid UTF-8.
#include <algorithm>
#include <future>

#include "engines/postgres/postgres_sql.hpp"
#include "pg_test_util.hpp"

namespace readpast::test {
namespace {

// Builds the schema as the release at `version` left it: its migrations, recorded as applied.
void create_schema_as_release(SqlConnection& db, int version) {
  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql statements(schema);
  db.script(statements.create_schema.sql);
  for (int m = 0; m < version; ++m) {
    db.script(statements.migrations[static_cast<std::size_t>(m)]);
    db.exec("INSERT INTO readpast.schema_version (version) VALUES (" + std::to_string(m + 1) + ")");
  }
}

class SchemaTest : public ::testing::Test {
 protected:
  void SetUp() override { url_ = PostgresServer::shared().fresh_database_url(); }
  std::string url_;
};

// A role of the cluster for one test, named after the test's database (roles are the
// cluster's), dropped with its grants when the test ends, whatever happened before.
class TestRole {
 public:
  TestRole(SqlConnection& db, const std::string& prefix)
      : db_(db), name_("\"" + prefix + "_" + db.scalar("SELECT current_database()") + "\"") {
    db_.exec("CREATE ROLE " + name_ + " NOLOGIN");
  }
  ~TestRole() {
    // Best effort, as a destructor must be: the statements' errors are left unread.
    for (const std::string& sql :
         {std::string("RESET ROLE"), "DROP OWNED BY " + name_, "DROP ROLE " + name_}) {
      PQclear(PQexec(db_.get(), sql.c_str()));
    }
  }
  TestRole(const TestRole&) = delete;
  TestRole& operator=(const TestRole&) = delete;

  const std::string& name() const { return name_; }  // quoted, for SQL text
  // Its privileges on readpast.<table>, sorted, comma-separated.
  std::string rights_on(const std::string& table) const {
    return db_.scalar(
        "SELECT string_agg(privilege_type, ',' ORDER BY privilege_type) "
        "FROM information_schema.role_table_grants WHERE table_schema = 'readpast' "
        "AND table_name = $1 AND grantee = $2",
        {table, name_.substr(1, name_.size() - 2)});
  }

 private:
  SqlConnection& db_;
  std::string name_;
};

TEST_F(SchemaTest, OpeningWithoutInitSaysToRunInit) {
  auto opened = Queue::open(url_);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, ErrorCode::kSchema);
  EXPECT_NE(opened.error().message.find("readpast init"), std::string::npos)
      << opened.error().message;
}

TEST_F(SchemaTest, InitIsIdempotent) {
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  SqlConnection db(url_);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.schema_version"),
            std::to_string(detail::pg::kSchemaVersion));
}

TEST_F(SchemaTest, ConcurrentInitsAreSafe) {
  std::vector<std::future<Result<int>>> inits;
  for (int i = 0; i < 8; ++i) {
    inits.push_back(std::async(std::launch::async, [&]() -> Result<int> {
      QueueOptions options;
      options.init_schema = true;
      auto queue = Queue::open(url_, options);
      if (!queue) return fail_with(queue.error());
      return queue->init();
    }));
  }
  for (auto& init : inits) {
    auto version = init.get();
    ASSERT_TRUE(version) << version.error().message;
    EXPECT_EQ(*version, detail::pg::kSchemaVersion);
  }
}

TEST_F(SchemaTest, TheSchemaParameterSelectsThePostgresSchema) {
  QueueOptions options;
  options.init_schema = true;
  Queue tenant_a = must(Queue::open(url_ + "?schema=tenant_a", options));
  Queue tenant_b = must(Queue::open(url_ + "?schema=tenant-b.2", options));
  must(tenant_a.enqueue(job("q", "for a")));
  EXPECT_TRUE(must(tenant_b.lease({.queue = "q", .worker_id = "w"})).empty());
  auto leased = must(tenant_a.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].payload, "for a");

  SqlConnection db(url_);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM tenant_a.jobs"), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM \"tenant-b.2\".jobs"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = 'readpast'"), "0");
  // The SQL functions live in each schema and use its own table.
  db.scalar("SELECT \"tenant-b.2\".enqueue('q', 'for b')");
  EXPECT_EQ(must(tenant_b.lease({.queue = "q", .worker_id = "w"})).size(), 1u);
}

TEST_F(SchemaTest, WakeUpsStayWithinTheirSchema) {
  QueueOptions options;
  options.init_schema = true;
  Queue tenant_a = must(Queue::open(url_ + "?schema=tenant_a", options));
  Queue tenant_b = must(Queue::open(url_ + "?schema=tenant_b", options));
  EXPECT_FALSE(must(tenant_a.wait_for_work("q", 50ms)));
  auto waiter =
      std::async(std::launch::async, [&] { return must(tenant_a.wait_for_work("q", 600ms)); });
  std::this_thread::sleep_for(100ms);
  must(tenant_b.enqueue(job("q")));
  EXPECT_FALSE(waiter.get());
}

TEST_F(SchemaTest, BadSchemaNamesAreRejectedBeforeConnecting) {
  const std::vector<std::string> bad_names = {"bad\"name", "",    "pg_catalog",
                                              "a;drop",    "x y", std::string(59, 'a')};
  for (const std::string& bad : bad_names) {
    auto opened = Queue::open(url_ + "?schema=" + bad);
    ASSERT_FALSE(opened) << bad;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument)
        << bad << ": " << opened.error().message;
  }
}

TEST_F(SchemaTest, ANewerSchemaIsRefused) {
  QueueOptions options;
  options.init_schema = true;
  must(Queue::open(url_, options));
  SqlConnection(url_).exec("INSERT INTO readpast.schema_version (version) VALUES (99)");
  auto opened = Queue::open(url_);
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, ErrorCode::kSchema);
  EXPECT_NE(opened.error().message.find("newer"), std::string::npos) << opened.error().message;
  auto init = Queue::open(url_, options);
  ASSERT_FALSE(init);
  EXPECT_EQ(init.error().code, ErrorCode::kSchema);
}

TEST_F(SchemaTest, InitUpgradesADatabaseThatAnEarlierReleaseCreated) {
  // The database as release 1 left it: migration 1 only, with a job in it.
  {
    SqlConnection db(url_);
    create_schema_as_release(db, 1);
    db.scalar("SELECT readpast.enqueue('q', 'from release 1')");
  }
  auto old = Queue::open(url_);
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, ErrorCode::kSchema);
  EXPECT_NE(old.error().message.find("older"), std::string::npos) << old.error().message;

  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  // The job survived, and what migration 2 added works.
  must(queue.pause("q"));
  EXPECT_TRUE(must(queue.lease({.queue = "q", .worker_id = "w"})).empty());
  SqlConnection db(url_);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lease('q', 'sql')"), "0")
      << "the SQL function lease() ignores the pause";
  must(queue.resume("q"));
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].payload, "from release 1");
}

// Migration 6: a schedule records the job of its latest tick. A schedule of version 5 (which
// had ticked) keeps its definition and tick; its last job is unknown until it ticks again.
TEST_F(SchemaTest, ASchedulesLastJobIsRecordedAfterAnUpgradeFrom5) {
  {
    SqlConnection db(url_);
    create_schema_as_release(db, 5);
    db.exec(
        "INSERT INTO readpast.schedules (name, queue, spec, payload, created_at, last_tick_at) "
        "VALUES ('beat', 'ticks', 'every 1m', 'p', 'epoch', 'epoch'::timestamptz + "
        "interval '1 minute')");
  }
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  auto schedules = must(queue.list_schedules());
  ASSERT_EQ(schedules.size(), 1u);
  ASSERT_TRUE(schedules[0].last_tick.has_value());
  EXPECT_EQ(schedules[0].last_tick->time_since_epoch(), std::chrono::minutes(1));
  EXPECT_FALSE(schedules[0].last_job.has_value());
  auto enqueued = must(queue.enqueue_due());
  ASSERT_EQ(enqueued.size(), 1u);
  schedules = must(queue.list_schedules());
  ASSERT_TRUE(schedules[0].last_job.has_value());
  EXPECT_EQ(*schedules[0].last_job, enqueued[0].id);
  // The id was drawn from the jobs' sequence: the next plain enqueue gets the next one.
  NewJob plain;
  plain.queue = "ticks";
  EXPECT_EQ(must(queue.enqueue(plain)).id, enqueued[0].id + 1);
}

// Migration 7: progress, error history and unique windows. A job of version 6 keeps its
// last_error with no history before the upgrade; the history of a job goes with it.
TEST_F(SchemaTest, ProgressErrorsAndWindowsWorkAfterAnUpgradeFrom6) {
  {
    SqlConnection db(url_);
    create_schema_as_release(db, 6);
    db.exec(
        "INSERT INTO readpast.jobs (queue, state, attempts, max_attempts, finished_at, "
        "last_error) VALUES ('q', 'dead', 1, 1, now(), 'from release 6')");
  }
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  Job old = must(queue.get(1));
  EXPECT_EQ(old.last_error, "from release 6");
  EXPECT_TRUE(old.errors.empty());
  EXPECT_FALSE(old.progress.has_value());

  NewJob job;
  job.queue = "q";
  job.max_attempts = 1;
  const JobId id = must(queue.enqueue(job)).id;
  LeaseRequest request;
  request.queue = "q";
  request.worker_id = "w";
  auto leased = must(queue.lease(request));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.progress(id, *leased[0].lease_token, "{\"n\": 1}"));
  must(queue.fail(id, *leased[0].lease_token, "after the upgrade"));
  SqlConnection db(url_);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors"), "1");
  PurgeRequest purge;
  purge.queue = "q";
  purge.state = JobState::kDead;
  EXPECT_EQ(must(queue.purge(purge)), 2);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors"), "0");

  NewJob windowed;
  windowed.queue = "u";
  windowed.unique_key = "k";
  windowed.unique_for = std::chrono::hours(1);
  EXPECT_TRUE(must(queue.enqueue(windowed)).inserted);
  EXPECT_FALSE(must(queue.enqueue(windowed)).inserted);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.unique_windows"), "1");
}

// The error history goes with its job however the job is deleted: here by its completion
// under zero retention (complete_delete), which the trigger follows because the job failed
// once; a job that never failed leaves nothing either.
TEST_F(SchemaTest, AJobDeletedOnCompletionLeavesNoErrorHistory) {
  QueueOptions options;
  options.init_schema = true;
  options.retention.succeeded = Duration::zero();
  Queue queue = must(Queue::open(url_, options));
  NewJob job;
  job.queue = "q";
  const JobId failed_once = must(queue.enqueue(job)).id;
  const JobId never_failed = must(queue.enqueue(job)).id;
  LeaseRequest request;
  request.queue = "q";
  request.worker_id = "w";
  request.max_jobs = 2;
  auto leased = must(queue.lease(request));
  ASSERT_EQ(leased.size(), 2u);
  FailOptions now;
  now.retry_after = Duration::zero();
  must(queue.fail(failed_once, *leased[0].lease_token, "once", now));
  must(queue.complete(never_failed, *leased[1].lease_token));
  SqlConnection db(url_);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors"), "1");
  request.max_jobs = 1;
  leased = must(queue.lease(request));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.complete(failed_once, *leased[0].lease_token));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors"), "0");
}

TEST_F(SchemaTest, TheStorageSettingsAreInPlace) {
  QueueOptions options;
  options.init_schema = true;
  must(Queue::open(url_, options));
  SqlConnection db(url_);
  // The tables behind the jobs view (migrations 10 and 17): live took the table's settings,
  // done kept them with its rows, waiting has them too.
  for (const char* table : {"readpast.live", "readpast.done", "readpast.waiting"}) {
    const std::string reloptions =
        db.scalar(std::string("SELECT array_to_string(reloptions, ',') FROM pg_class "
                              "WHERE oid = '") +
                  table + "'::regclass");
    EXPECT_NE(reloptions.find("fillfactor=80"), std::string::npos) << table << ": " << reloptions;
    EXPECT_NE(reloptions.find("autovacuum_vacuum_scale_factor=0.01"), std::string::npos)
        << table << ": " << reloptions;
  }
  // live: the primary key, lease and group indexes (the unique keys are held in unique_keys
  // since schema 15; no due index since schema 16; the waiting jobs' in waiting since schema
  // 17; the expiry index on running since schema 23); waiting: the primary key, queue and
  // group indexes; done: the primary key, finished, notify and group indexes.
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = 'readpast' "
                      "AND tablename = 'live'"),
            "3");
  // running (schema 23): a ring of three segments, each with the primary key, expiry and group
  // indexes, filled to 80% so that an extend can update in place.
  EXPECT_EQ(db.scalar("SELECT string_agg(c.relname || ':' || array_to_string(c.reloptions, ','), "
                      "' ' ORDER BY c.relname) FROM pg_inherits i "
                      "JOIN pg_class c ON c.oid = i.inhrelid "
                      "WHERE i.inhparent = 'readpast.running'::regclass AND c.relkind = 'r'"),
            "running_0:fillfactor=80 running_1:fillfactor=80 running_2:fillfactor=80");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = 'readpast' "
                      "AND tablename = 'running_1'"),
            "3");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = 'readpast' "
                      "AND tablename = 'waiting'"),
            "3");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = 'readpast' "
                      "AND tablename = 'done'"),
            "4");
  EXPECT_EQ(db.scalar("SELECT relkind FROM pg_class WHERE oid = 'readpast.jobs'::regclass"), "v");
}

class EngineDetailsTest : public PostgresTest {};

TEST_F(EngineDetailsTest, InvalidUtf8InAnErrorMessageIsRecordedNotRefused) {
  Queue queue = open();
  const JobId id = must(queue.enqueue(job("q"))).id;
  auto leased = must(queue.lease({.queue = "q", .worker_id = std::string("w\xff\0x", 4)}));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.fail(id, *leased[0].lease_token, std::string("bad \xc3\x28 bytes\0!", 14)));
  Job failed = must(queue.get(id));
  // One decoder on every path (core/utf8.hpp): ill-formed bytes become U+FFFD, NUL U+2400.
  EXPECT_EQ(failed.last_error, "bad \xef\xbf\xbd( bytes\xe2\x90\x80!");
  EXPECT_EQ(failed.leased_by, "w\xef\xbf\xbd\xe2\x90\x80x");
}

TEST_F(EngineDetailsTest, PayloadsAreBytes) {
  Queue queue = open();
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  const JobId id = must(queue.enqueue(job("q", bytes))).id;
  EXPECT_EQ(must(queue.get(id)).payload, bytes);
  SqlConnection db(url());
  EXPECT_EQ(db.scalar("SELECT length(payload) FROM readpast.jobs"), "256");
}

TEST_F(EngineDetailsTest, TimesAreTheDatabasesAndMicrosecondExact) {
  Queue queue = open();
  NewJob at = job("q");
  at.run_at = TimePoint(std::chrono::microseconds(1'900'000'000'123'456));
  const JobId id = must(queue.enqueue(at)).id;
  EXPECT_EQ(must(queue.get(id)).run_at, *at.run_at);
  SqlConnection db(url());
  EXPECT_EQ(db.scalar("SELECT to_char(run_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') "
                      "FROM readpast.jobs"),
            "2030-03-17 17:46:40.123456");
}

// Migration 9 (dependencies) upgrades a schema-8 database with jobs in flight: a running job
// is completed with the token it was leased with, a held unique key stays held, and a job can
// then wait for either.
TEST_F(SchemaTest, JobsInFlightSurviveTheUpgradeToDependencies) {
  constexpr int kBeforeDependencies = 8;
  {
    SqlConnection db(url_);
    create_schema_as_release(db, kBeforeDependencies);
    db.exec(
        "INSERT INTO readpast.jobs (queue, payload, state, attempts, lease_token, leased_by, "
        "lease_expires_at, started_at) VALUES ('q', 'running', 'running', 1, "
        "'00000000000000000000000000000001', 'w', now() + interval '1 hour', now())");
    db.exec("INSERT INTO readpast.jobs (queue, payload, unique_key) VALUES ('q', 'held', 'k')");
  }
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  NewJob after_both;
  after_both.queue = "next";
  after_both.after = {1, 2};
  const JobId waiting = must(queue.enqueue(after_both)).id;
  EXPECT_EQ(must(queue.get(waiting)).state, JobState::kWaiting);
  NewJob same_key;
  same_key.queue = "q";
  same_key.unique_key = "k";
  EXPECT_EQ(must(queue.enqueue(same_key)).id, 2) << "the held key was lost";
  must(queue.complete(1, must(LeaseToken::from_hex("00000000000000000000000000000001"))));
  must(queue.resolve_dependencies());
  EXPECT_EQ(must(queue.get(waiting)).state, JobState::kWaiting);
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.complete(leased[0].id, *leased[0].lease_token));
  must(queue.resolve_dependencies());
  EXPECT_EQ(must(queue.get(waiting)).state, JobState::kAvailable);
}

// Migration 10 (finished jobs in done, jobs a view) upgrades a schema-9 database with jobs in
// every state: each keeps its state, times, token and error history; a lease taken before the
// upgrade is settled after it with its token; ids go on from the same counter; a held unique
// key stays held; a waiting job is released by its dependency's success.
TEST_F(SchemaTest, JobsInEveryStateSurviveTheUpgradeToTheFinishedJobsTable) {
  constexpr int kBeforeFinishedTable = 9;
  const std::string token1 = "00000000000000000000000000000001";
  const std::string token2 = "00000000000000000000000000000002";
  {
    SqlConnection db(url_);
    create_schema_as_release(db, kBeforeFinishedTable);
    const std::string running =
        "INSERT INTO readpast.jobs (queue, payload, state, attempts, max_attempts, lease_token, "
        "leased_by, lease_expires_at, started_at, last_error) VALUES ('q', '%s', 'running', 1, "
        "%s, '%s', 'w', now() + interval '1 hour', now(), %s)";
    auto format = [](std::string text, std::initializer_list<std::string> values) {
      for (const auto& v : values) text.replace(text.find("%s"), 2, v);
      return text;
    };
    db.exec("INSERT INTO readpast.jobs (queue, payload) VALUES ('q', 'due')");  // 1
    db.exec(
        "INSERT INTO readpast.jobs (queue, payload, run_at) "
        "VALUES ('q', 'later', now() + interval '1 hour')");                   // 2
    db.exec(format(running, {"running", "3", token1, "'first try failed'"}));  // 3
    db.exec(
        "INSERT INTO readpast.job_errors (job_id, attempt, at, error) "
        "VALUES (3, 1, now(), 'first try failed')");
    db.exec("SELECT readpast.enqueue_after(ARRAY[3]::bigint[], 'q', 'waits')");  // 4
    db.exec(
        "INSERT INTO readpast.jobs (queue, payload, state, attempts, finished_at) "
        "VALUES ('q', 'ok', 'succeeded', 1, now())");  // 5
    db.exec(
        "INSERT INTO readpast.jobs (queue, payload, state, attempts, finished_at, "
        "last_error) VALUES ('q', 'died', 'dead', 1, now(), 'boom')");  // 6
    db.exec(
        "INSERT INTO readpast.job_errors (job_id, attempt, at, error) "
        "VALUES (6, 1, now(), 'boom')");
    db.exec(
        "INSERT INTO readpast.jobs (queue, payload, state, finished_at) "
        "VALUES ('q', 'stopped', 'cancelled', now())");  // 7
    db.exec(
        "INSERT INTO readpast.jobs (queue, payload, unique_key) "
        "VALUES ('q', 'held', 'k')");                             // 8
    db.exec(format(running, {"last try", "1", token2, "NULL"}));  // 9
  }
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);

  SqlConnection db(url_);
  EXPECT_EQ(db.scalar("SELECT relkind FROM pg_class WHERE oid = 'readpast.jobs'::regclass"), "v");
  // (Through to the latest schema: the waiting job is in waiting since schema 17, the one
  // scheduled for later in scheduled since schema 18, the running ones in running since
  // schema 23.)
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM readpast.live"), "1,8");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM readpast.running"), "3,9");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM readpast.scheduled"), "2");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM readpast.waiting"), "4");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ',' ORDER BY id) FROM readpast.done"), "5,6,7");
  const JobState expected[] = {JobState::kAvailable, JobState::kAvailable, JobState::kRunning,
                               JobState::kWaiting,   JobState::kSucceeded, JobState::kDead,
                               JobState::kCancelled, JobState::kAvailable, JobState::kRunning};
  for (JobId id = 1; id <= 9; ++id) {
    EXPECT_EQ(must(queue.get(id)).state, expected[id - 1]) << "job " << id;
  }
  EXPECT_EQ(must(queue.get(3)).leased_by, "w");
  ASSERT_EQ(must(queue.get(6)).errors.size(), 1u);

  // Ids go on from the same counter; the held key stays held.
  EXPECT_EQ(must(queue.enqueue(job("q", "new"))).id, 10);
  NewJob same_key = job("q");
  same_key.unique_key = "k";
  EXPECT_EQ(must(queue.enqueue(same_key)).id, 8) << "the held key was lost";

  // The leases taken before the upgrade settle with their tokens; the history goes with job 3
  // into done, and job 9 dies with its attempt recorded.
  must(queue.complete(3, must(LeaseToken::from_hex(token1))));
  EXPECT_EQ(must(queue.get(3)).state, JobState::kSucceeded);
  EXPECT_EQ(must(queue.get(3)).errors.size(), 1u) << "the move to done lost the history";
  EXPECT_EQ(must(queue.fail(9, must(LeaseToken::from_hex(token2)), "gone")), FailOutcome::kDead);
  EXPECT_EQ(must(queue.get(9)).errors.size(), 1u);
  must(queue.resolve_dependencies());
  EXPECT_EQ(must(queue.get(4)).state, JobState::kAvailable);

  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 10}));
  std::vector<JobId> ids;
  for (const Job& j : leased) ids.push_back(j.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<JobId>{1, 4, 8, 10}));
}

// Migration 15 (unique keys in a table of their own) upgrades a schema-14 database: the keys
// of available, running and waiting jobs stay held by them, a finished job's key stays free,
// a lease taken before settles after with its token and frees its key, and a role granted
// rights on live before gets them on unique_keys.
TEST_F(SchemaTest, HeldKeysStayHeldThroughTheUpgradeToTheKeysTable) {
  constexpr int kBeforeUniqueKeys = 14;
  const std::string token = "00000000000000000000000000000001";
  SqlConnection db(url_);
  create_schema_as_release(db, kBeforeUniqueKeys);
  db.exec("INSERT INTO readpast.jobs (queue, unique_key) VALUES ('q', 'available')");  // 1
  db.exec(
      "INSERT INTO readpast.jobs (queue, unique_key, state, attempts, lease_token, leased_by, "
      "lease_expires_at, started_at) VALUES ('q', 'running', 'running', 1, '" +
      token + "', 'w', now() + interval '1 hour', now())");                                    // 2
  db.exec("SELECT readpast.enqueue_after(ARRAY[2]::bigint[], 'q', unique_key => 'waiting')");  // 3
  db.exec(
      "INSERT INTO readpast.jobs (queue, unique_key, state, finished_at) "
      "VALUES ('q', 'finished', 'succeeded', now())");        // 4
  db.exec("INSERT INTO readpast.jobs (queue) VALUES ('q')");  // 5, no key
  const TestRole keys_role(db, "keys");
  const std::string& role = keys_role.name();
  db.exec("GRANT SELECT, INSERT, DELETE ON readpast.live TO " + role);

  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  EXPECT_EQ(db.scalar("SELECT string_agg(unique_key || '=' || job_id, ' ' ORDER BY job_id) "
                      "FROM readpast.unique_keys"),
            "available=1 running=2 waiting=3");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'jobs_unique_key_idx'"),
            "0");
  EXPECT_EQ(keys_role.rights_on("unique_keys"), "DELETE,INSERT,SELECT");

  JobId id = 1;
  for (const char* key : {"available", "running", "waiting"}) {
    NewJob same = job("q");
    same.unique_key = key;
    EXPECT_EQ(must(queue.enqueue(same)).id, id++) << key << ": the held key was lost";
  }
  NewJob finished = job("q");
  finished.unique_key = "finished";
  EXPECT_TRUE(must(queue.enqueue(finished)).inserted);

  must(queue.complete(2, must(LeaseToken::from_hex(token))));
  NewJob running_again = job("q");
  running_again.unique_key = "running";
  EXPECT_TRUE(must(queue.enqueue(running_again)).inserted) << "completing kept the key";
  must(queue.resolve_dependencies());
  EXPECT_EQ(must(queue.get(3)).state, JobState::kAvailable);
}

// Migration 17 (waiting jobs in a table of their own) upgrades a schema-16 database: the
// waiting jobs move with their keys, counts, group waits and error history; the lease a
// dependency was taken with before settles after; the dependents are then released by the
// resolver or cancelled down the chain; a role granted rights on live gets them on waiting.
TEST_F(SchemaTest, WaitingJobsMoveToTheirTableWithTheirKeysAndHistory) {
  constexpr int kBeforeWaitingTable = 16;
  const std::string token = "00000000000000000000000000000001";
  SqlConnection db(url_);
  create_schema_as_release(db, kBeforeWaitingTable);
  db.exec(
      "INSERT INTO readpast.jobs (queue, state, attempts, lease_token, leased_by, "
      "lease_expires_at, started_at) VALUES ('q', 'running', 1, '" +
      token + "', 'w', now() + interval '1 hour', now())");                                 // 1
  db.exec("INSERT INTO readpast.jobs (queue, max_attempts) VALUES ('q', 1)");               // 2
  db.exec("SELECT readpast.enqueue_after(ARRAY[1]::bigint[], 'q', unique_key => 'k')");     // 3
  db.exec("SELECT readpast.enqueue_after(ARRAY[1, 2]::bigint[], 'q', group_name => 'g')");  // 4
  db.exec("SELECT readpast.enqueue_after(ARRAY[]::bigint[], 'q', after_group => 'g')");     // 5
  db.exec("UPDATE readpast.live SET last_error = 'before' WHERE id = 3");
  db.exec(
      "INSERT INTO readpast.job_errors (job_id, attempt, at, error) VALUES (3, 1, now(), "
      "'before')");
  const TestRole waits_role(db, "waits");
  const std::string& role = waits_role.name();
  db.exec("GRANT SELECT, INSERT, UPDATE, DELETE ON readpast.live TO " + role);

  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  EXPECT_EQ(db.scalar("SELECT string_agg(id || ':' || waiting_for, ' ' ORDER BY id) "
                      "FROM readpast.waiting"),
            "3:1 4:2 5:1");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.live"), "2");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.running"), "1");
  EXPECT_EQ(
      db.scalar("SELECT string_agg(unique_key || '=' || job_id, ' ') FROM readpast.unique_keys"),
      "k=3");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors WHERE job_id = 3"), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'jobs_waiting_idx'"), "0");
  EXPECT_EQ(waits_role.rights_on("waiting"), "DELETE,INSERT,SELECT,UPDATE");
  EXPECT_EQ(must(queue.get(3)).state, JobState::kWaiting);
  NewJob same = job("q");
  same.unique_key = "k";
  EXPECT_EQ(must(queue.enqueue(same)).id, 3) << "the held key was lost";

  // Job 1 succeeds with the token it was leased with before: 3 is released; job 2 dies: 4 is
  // cancelled, and with it the last member of group g finishes, which releases 5.
  must(queue.complete(1, must(LeaseToken::from_hex(token))));
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, 2);
  EXPECT_EQ(must(queue.fail(2, *leased[0].lease_token, "boom")), FailOutcome::kDead);
  for (int round = 0; round < 5 && must(queue.resolve_dependencies()) > 0; ++round) {
  }
  EXPECT_EQ(must(queue.get(3)).state, JobState::kAvailable);
  EXPECT_EQ(must(queue.get(3)).errors.size(), 1u);
  EXPECT_EQ(must(queue.get(4)).state, JobState::kCancelled);
  EXPECT_EQ(must(queue.get(5)).state, JobState::kAvailable);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.waiting"), "0");
}

// Schema 18: available jobs scheduled for later move from live to scheduled with their keys
// and error history, a lease taken before settles after, and a lease after their run_at (made
// due by a hand edit) promotes and takes them. A role's rights on live are carried over.
TEST_F(SchemaTest, ScheduledJobsMoveToTheirTableWithTheirKeysAndHistory) {
  constexpr int kBeforeScheduledTable = 17;
  const std::string token = "00000000000000000000000000000001";
  SqlConnection db(url_);
  create_schema_as_release(db, kBeforeScheduledTable);
  db.exec(
      "INSERT INTO readpast.jobs (queue, state, attempts, lease_token, leased_by, "
      "lease_expires_at, started_at) VALUES ('q', 'running', 1, '" +
      token + "', 'w', now() + interval '1 hour', now())");                                // 1
  db.exec("SELECT readpast.enqueue('q', unique_key => 'k', delay => interval '1 hour')");  // 2
  db.exec("SELECT readpast.enqueue('q')");                                                 // 3
  db.exec("UPDATE readpast.live SET last_error = 'before' WHERE id = 2");
  db.exec(
      "INSERT INTO readpast.job_errors (job_id, attempt, at, error) VALUES (2, 1, now(), "
      "'before')");
  const TestRole later_role(db, "later");
  const std::string& role = later_role.name();
  db.exec("GRANT SELECT, INSERT, UPDATE, DELETE ON readpast.live TO " + role);

  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.scheduled"), "2");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.live"), "3");
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.running"), "1");
  EXPECT_EQ(
      db.scalar("SELECT string_agg(unique_key || '=' || job_id, ' ') FROM readpast.unique_keys"),
      "k=2");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors WHERE job_id = 2"), "1");
  EXPECT_EQ(later_role.rights_on("scheduled"), "DELETE,INSERT,SELECT,UPDATE");
  NewJob same = job("q");
  same.unique_key = "k";
  EXPECT_EQ(must(queue.enqueue(same)).id, 2) << "the held key was lost";

  must(queue.complete(1, must(LeaseToken::from_hex(token))));
  db.exec("UPDATE readpast.jobs SET run_at = now() WHERE id = 2");
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5}));
  ASSERT_EQ(leased.size(), 2u);
  EXPECT_EQ(leased[0].id, 3);
  EXPECT_EQ(leased[1].id, 2);
  EXPECT_EQ(must(queue.get(2)).errors.size(), 1u);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.scheduled"), "0");
}

// An application's role granted rights on the jobs table before schema 10 keeps them on the
// view and the tables behind it, and on the jobs' sequence that the view's inserts draw from.
TEST_F(SchemaTest, RightsGrantedOnTheJobsTableCarryOverToTheViewAndItsTables) {
  SqlConnection db(url_);
  create_schema_as_release(db, 9);
  const TestRole app_role(db, "app");
  const std::string& role = app_role.name();
  db.exec("GRANT USAGE ON SCHEMA readpast TO " + role);
  db.exec("GRANT SELECT, INSERT, UPDATE, DELETE ON readpast.jobs TO " + role);
  db.exec("GRANT USAGE ON SEQUENCE readpast.jobs_id_seq TO " + role);
  QueueOptions options;
  options.init_schema = true;
  must(Queue::open(url_, options));

  db.exec("SET ROLE " + role);
  db.exec("INSERT INTO readpast.jobs (queue) VALUES ('q')");
  db.exec("INSERT INTO readpast.jobs (queue, state, finished_at) VALUES ('q', 'succeeded', now())");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs"), "2");
  EXPECT_EQ(db.scalar("UPDATE readpast.jobs SET priority = 5 WHERE state = 'available' "
                      "RETURNING priority"),
            "5");
  db.exec("DELETE FROM readpast.jobs");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs"), "0");
  db.exec("RESET ROLE");
}

// Schema 11 (lanes and marks for the lease's frontiers): the lanes of the jobs already there
// are registered by the upgrade, and an application role granted rights on the tables before
// it leases and enqueues after it, without rights of its own on lanes and lane_marks beyond
// those the upgrade gives it.
TEST_F(SchemaTest, TheUpgradeToLanesRegistersTheLanesOfTheJobsThereAndKeepsRolesWorking) {
  SqlConnection db(url_);
  create_schema_as_release(db, 10);
  db.exec("INSERT INTO readpast.jobs (queue, priority) VALUES ('a', 5), ('a', 0), ('b', 100)");
  db.exec(
      "INSERT INTO readpast.jobs (queue, priority, state, lease_token, leased_by, "
      "lease_expires_at, started_at, attempts) VALUES ('c', 3, 'running', "
      "gen_random_uuid(), 'w', now() + interval '1 hour', now(), 1)");
  const TestRole app_role(db, "app");
  const std::string& role = app_role.name();
  db.exec("GRANT USAGE ON SCHEMA readpast TO " + role);
  db.exec(
      "GRANT SELECT, INSERT, UPDATE, DELETE ON readpast.jobs, readpast.live, "
      "readpast.queues TO " +
      role);
  db.exec("GRANT USAGE ON SEQUENCE readpast.jobs_id_seq TO " + role);
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(db.scalar("SELECT string_agg(queue || ':' || priority, ' ' ORDER BY queue, priority) "
                      "FROM readpast.lanes"),
            "a:0 a:5 b:100 c:3");

  // The role enqueues in a lane never used and leases with the engine's lease_lanes
  // statement, lane by lane, which finds that lane and registers it (register_lanes, as its
  // owner).
  db.exec("SET ROLE " + role);
  db.exec("INSERT INTO readpast.jobs (queue, priority) VALUES ('a', 9)");
  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  const std::string tokens =
      db.scalar("SELECT array_agg(gen_random_uuid())::text FROM generate_series(1, 10)");
  const auto leased = db.query(sql.lease_lanes.sql,
                               {"a", "w", "30000000", tokens, "0", "{}", "{}", "{}", "{}", "10"});
  db.exec("RESET ROLE");
  ASSERT_EQ(leased.size(), 3u);
  EXPECT_EQ(db.scalar("SELECT string_agg(priority::text, ' ' ORDER BY priority) "
                      "FROM readpast.running WHERE queue = 'a'"),
            "0 5 9");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lanes WHERE queue = 'a' AND priority = 9"),
            "1");
}

// Opens with init while `holder` (pid `pid`) holds a table the upgrade must lock: the upgrade
// must give up within seconds, saying `expected` and naming the holder.
void expect_upgrade_refused(const std::string& url, const std::string& pid,
                            const std::string& expected) {
  QueueOptions options;
  options.init_schema = true;
  const auto started = std::chrono::steady_clock::now();
  auto refused = Queue::open(url, options);
  const auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_FALSE(refused) << "the upgrade went ahead under another session's lock";
  EXPECT_NE(refused.error().message.find(expected), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("pid " + pid), std::string::npos)
      << refused.error().message;
  EXPECT_LT(waited, std::chrono::seconds(30));
}

// The upgrade to schema 10 waits at most 5 s for its lock on the jobs table: a long
// transaction that holds the table makes init fail, naming that session, instead of queueing
// behind it with every worker queued behind the upgrade; nothing has changed, and init
// succeeds once the transaction ends.
TEST_F(SchemaTest, TheUpgradeToTheFinishedJobsTableGivesUpOnALongTransactionAndSaysWhich) {
  SqlConnection holder(url_);
  create_schema_as_release(holder, 9);
  holder.exec("INSERT INTO readpast.jobs (queue) VALUES ('q')");
  const std::string pid = holder.scalar("SELECT pg_backend_pid()");
  holder.exec("BEGIN");
  holder.exec("SELECT count(*) FROM readpast.jobs");  // ACCESS SHARE until the transaction ends

  expect_upgrade_refused(url_, pid, "could not lock");
  EXPECT_EQ(holder.scalar("SELECT max(version) FROM readpast.schema_version"), "9");
  EXPECT_EQ(holder.scalar("SELECT relkind FROM pg_class WHERE oid = 'readpast.jobs'::regclass"),
            "r");

  holder.exec("ROLLBACK");
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  EXPECT_EQ(must(queue.get(1)).state, JobState::kAvailable);
}

// The upgrade to schema 15 waits at most 5 s for its lock on live, as schema 10's did
// (lock_for_upgrade, written once for the migrations after it): it fails naming the session
// that holds live, changes nothing, and succeeds once that transaction ends.
TEST_F(SchemaTest, TheUpgradeToTheKeysTableGivesUpOnALongTransactionAndSaysWhich) {
  SqlConnection holder(url_);
  create_schema_as_release(holder, 14);
  holder.exec("INSERT INTO readpast.jobs (queue, unique_key) VALUES ('q', 'k')");
  const std::string pid = holder.scalar("SELECT pg_backend_pid()");
  holder.exec("BEGIN");
  holder.exec("SELECT count(*) FROM readpast.live");  // ACCESS SHARE until the transaction ends

  expect_upgrade_refused(url_, pid, "could not lock readpast.live within 5 s");
  EXPECT_EQ(holder.scalar("SELECT max(version) FROM readpast.schema_version"), "14");
  EXPECT_EQ(holder.scalar("SELECT count(*) FROM pg_indexes WHERE indexname = "
                          "'jobs_unique_key_idx'"),
            "1");

  holder.exec("ROLLBACK");
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  NewJob same_key = job("q");
  same_key.unique_key = "k";
  EXPECT_EQ(must(queue.enqueue(same_key)).id, 1);
}

// FOR UPDATE through the view locks no row, so the view's UPDATE is fenced by the state and
// token it read: of two sessions that lease one available job through the view at once (as a
// worker of the binary before schema 10 would, its statements naming jobs), one takes it and
// the other changes nothing, after waiting for the first to commit.
TEST_F(SchemaTest, TwoSessionsTakingOneJobThroughTheViewTakeItOnce) {
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  const JobId id = must(queue.enqueue(job("q"))).id;
  const std::string take =
      "UPDATE readpast.jobs SET state = 'running', attempts = attempts + 1, lease_token = $1, "
      "lease_expires_at = now() + interval '1 minute' "
      "WHERE id = " +
      std::to_string(id) + " AND state = 'available' RETURNING id";
  SqlConnection first(url_);
  SqlConnection second(url_);
  first.exec("BEGIN");
  ASSERT_EQ(first.query(take, {"00000000000000000000000000000001"}).size(), 1u);
  auto racing = std::async(std::launch::async, [&] {
    return second.query(take, {"00000000000000000000000000000002"}).size();
  });
  EXPECT_EQ(racing.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the second update did not wait for the first";
  first.exec("COMMIT");
  EXPECT_EQ(racing.get(), 0u) << "the job was taken twice";
  const Job taken = must(queue.get(id));
  EXPECT_EQ(taken.attempts, 1);
  EXPECT_EQ(taken.lease_token->hex(), "00000000000000000000000000000001");
}

// An UPDATE through the view writes the columns it changes over the row as it is when it
// writes: what another transaction committed after the statement's snapshot (here a
// dependency's notify flag, as lock_dependencies sets it) is kept, as on a table.
TEST_F(SchemaTest, AnUpdateThroughTheViewKeepsWhatAnotherSessionChangedMeanwhile) {
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  const std::string id = std::to_string(must(queue.enqueue(job("q"))).id);
  SqlConnection other(url_);
  SqlConnection mine(url_);
  other.exec("BEGIN");
  other.exec("UPDATE readpast.live SET notify = true WHERE id = " + id);
  auto update = std::async(std::launch::async, [&] {
    return mine.query("UPDATE readpast.jobs SET priority = 7 WHERE id = " + id + " RETURNING id")
        .size();
  });
  EXPECT_EQ(update.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "the update did not wait for the row's lock";
  other.exec("COMMIT");
  EXPECT_EQ(update.get(), 1u);
  EXPECT_EQ(mine.scalar("SELECT priority || '/' || notify FROM readpast.live WHERE id = " + id),
            "7/true")
      << "the view's update wrote back a column it did not change";
}

// No SQL function writes, or locks rows, through the jobs view: FOR UPDATE there locks no
// row and a write goes through the view's trigger one row at a time (a function left on the
// view by a migration would still work, slowly and without its row locks).
TEST_F(SchemaTest, NoSqlFunctionWritesOrLocksThroughTheJobsView) {
  QueueOptions options;
  options.init_schema = true;
  must(Queue::open(url_, options));
  SqlConnection db(url_);
  EXPECT_EQ(
      db.scalar("SELECT coalesce(string_agg(proname, ', '), '') FROM pg_proc "
                "WHERE pronamespace = 'readpast'::regnamespace AND ("
                "prosrc ~* '(update|insert\\s+into|delete\\s+from)\\s+\"readpast\"\\.jobs\\M' "
                "OR prosrc ~* '\"readpast\"\\.jobs\\M[^;]*for\\s+update')"),
      "");
}

// The jobs view takes plain INSERT, UPDATE and DELETE as the table did (docs/sql.md): each
// acts on the table that holds the job, an UPDATE across live and finished states moves it,
// and a job's error history goes only when the job is gone from both tables.
TEST_F(SchemaTest, TheJobsViewTakesInsertUpdateAndDeleteLikeATable) {
  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  SqlConnection db(url_);
  const std::string live =
      db.scalar("INSERT INTO readpast.jobs (queue, payload) VALUES ('q', 'x') RETURNING id");
  const std::string done = db.scalar(
      "INSERT INTO readpast.jobs (queue, state, finished_at, last_error) "
      "VALUES ('q', 'dead', now(), 'by hand') RETURNING id");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.live WHERE id = $1", {live}), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.done WHERE id = $1", {done}), "1");
  EXPECT_EQ(must(queue.get(std::stoll(done))).state, JobState::kDead);
  db.exec("INSERT INTO readpast.job_errors (job_id, attempt, at, error) VALUES (" + done +
          ", 1, now(), 'by hand')");

  // In place, then across: the dead job back to available, the available one to cancelled.
  EXPECT_EQ(
      db.scalar("UPDATE readpast.jobs SET priority = 7 WHERE id = $1 RETURNING priority", {live}),
      "7");
  db.exec("UPDATE readpast.jobs SET state = 'available', finished_at = NULL WHERE id = " + done);
  db.exec("UPDATE readpast.jobs SET state = 'cancelled', finished_at = now() WHERE id = " + live);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.live WHERE id = $1", {done}), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.done WHERE id = $1", {live}), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors WHERE job_id = $1", {done}), "1")
      << "a move lost the error history";
  EXPECT_THROW(db.exec("UPDATE readpast.jobs SET id = 0 WHERE id = " + live), std::runtime_error);

  db.exec("DELETE FROM readpast.jobs WHERE id IN (" + live + ", " + done + ")");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs"), "0");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors"), "0");
}

// Migration 22 (δ from 100 to 10 ms) upgrades a schema-21 database in place: a lease taken
// through the SQL functions before settles after with its token, and the triggers mark by the
// new rule (a job dated 9 ms before a statement that ran 3 ms: older than 10 ms when the
// trigger ran; schema 21 did not mark it).
TEST_F(SchemaTest, ALeaseTakenBeforeTheTenMillisecondDeltaSettlesAfterIt) {
  constexpr int kBeforeTheShortDelta = 21;
  SqlConnection db(url_);
  create_schema_as_release(db, kBeforeTheShortDelta);
  db.exec("INSERT INTO readpast.jobs (queue, payload) VALUES ('q', 'x'), ('q', 'y')");
  const Row leased =
      db.query("SELECT id::text, lease_token::text FROM readpast.lease('q', 'w')").at(0);

  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  EXPECT_EQ(db.scalar("SELECT readpast.complete($1::bigint, $2::uuid)", {leased[0], leased[1]}),
            "t");
  const std::string early = db.scalar(
      "INSERT INTO readpast.jobs (queue, payload, run_at) SELECT 'q', 'early'::bytea, "
      "statement_timestamp() - interval '9 milliseconds' FROM pg_sleep(0.003) RETURNING id");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lane_marks WHERE id = $1", {early}), "1");
  auto rest = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5}));
  EXPECT_EQ(rest.size(), 2u);
}

// Schema 23: the running jobs move from live to the running ring with their keys and error
// history, and their leases settle after the upgrade under the tokens they were taken with. A
// role granted rights on live gets them on running, and may rotate the ring.
TEST_F(SchemaTest, RunningJobsMoveToTheRingWithTheirLeasesKeysAndHistory) {
  constexpr int kBeforeRunningRing = 22;
  const std::string token = "00000000000000000000000000000001";
  SqlConnection db(url_);
  create_schema_as_release(db, kBeforeRunningRing);
  db.exec("SELECT readpast.enqueue('q', unique_key => 'k')");  // 1
  db.exec("SELECT readpast.enqueue('q')");                     // 2
  db.exec("UPDATE readpast.live SET state = 'running', attempts = 1, lease_token = '" + token +
          "', leased_by = 'w', lease_expires_at = now() + interval '1 hour', started_at = now(), "
          "last_error = 'before' WHERE id = 1");
  db.exec(
      "INSERT INTO readpast.job_errors (job_id, attempt, at, error) VALUES (1, 1, now(), "
      "'before')");
  const TestRole ring_role(db, "ring");
  const std::string& role = ring_role.name();
  db.exec("GRANT USAGE ON SCHEMA readpast TO " + role);
  // A worker's rights, on every table there was before the upgrade.
  db.exec("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA readpast TO " + role);

  QueueOptions options;
  options.init_schema = true;
  Queue queue = must(Queue::open(url_, options));
  EXPECT_EQ(must(queue.init()), detail::pg::kSchemaVersion);
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.live"), "2");
  EXPECT_EQ(db.scalar("SELECT string_agg(id || ':' || seg, ' ' ORDER BY id) FROM readpast.running"),
            "1:0");
  EXPECT_EQ(
      db.scalar("SELECT string_agg(unique_key || '=' || job_id, ' ') FROM readpast.unique_keys"),
      "k=1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors WHERE job_id = 1"), "1");
  EXPECT_EQ(ring_role.rights_on("running"), "DELETE,INSERT,SELECT,UPDATE");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM pg_indexes WHERE schemaname = 'readpast' "
                      "AND indexname = 'jobs_expiry_idx'"),
            "0");

  // The role rotates the ring twice, and the third rotation moves the job; nothing is lost.
  db.exec("SET ROLE " + role);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(db.scalar("SELECT rotated FROM readpast.rotate_running()"), "t");
  }
  db.exec("RESET ROLE");
  EXPECT_EQ(db.scalar("SELECT string_agg(id || ':' || seg, ' ' ORDER BY id) FROM readpast.running"),
            "1:2");
  NewJob same = job("q");
  same.unique_key = "k";
  EXPECT_FALSE(must(queue.enqueue(same)).inserted) << "the running job's key was given back";
  must(queue.complete(1, must(LeaseToken::from_hex(token))));
  const Job done = must(queue.get(1));
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_EQ(done.errors.size(), 1u);
  EXPECT_TRUE(must(queue.enqueue(same)).inserted) << "completing kept the key";
}

}  // namespace
}  // namespace readpast::test
