// What only the SQLite engine has to prove: the file is in WAL mode with the documented
// synchronous level; a writer blocked past busy_timeout gets kUnavailable in time; the
// schema is versioned (older upgraded in place, newer refused) and checks queue names
// itself; every hot path's statement uses its partial index, and list, stats and retry an
// index range; the WAL stays short, shrinks back after a held reader, and a reader that pins
// the database file does not make every commit attempt a checkpoint.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engines/sqlite/sqlite_connection.hpp"
#include "engines/sqlite/sqlite_schema.hpp"
#include "engines/sqlite/sqlite_statements.hpp"
#include "readpast/readpast.hpp"
#include "sqlite/raw_db.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;
namespace sqlite = detail::sqlite;

class SqliteEngineTest : public ::testing::Test {
 protected:
  std::string path() const { return dir_.file("jobs.db"); }
  std::string url() const { return "sqlite:" + path(); }
  // The file as release `version` of readpast left it: migrated up to that version only.
  void create_as_release(int version) {
    sqlite::Connection::Settings settings;
    settings.path = path();
    settings.create = true;
    settings.page_size = 4096;  // SQLite's default, which releases before run 45 kept
    auto connection = sqlite::Connection::open(settings);
    ASSERT_TRUE(connection);
    ASSERT_EQ(*sqlite::migrate(**connection, version), version);
  }
  // The size of the test file's WAL (0 when there is none).
  std::uintmax_t wal_bytes() const {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path() + "-wal", ec);
    return ec ? std::uintmax_t{0} : size;
  }
  // 100 jobs of 16 KiB enqueued in one batch, leased and completed: about 3.5 MB of WAL.
  static void write_a_round(Queue& queue) {
    std::vector<NewJob> batch(100);
    for (NewJob& job : batch) {
      job.queue = "q";
      job.payload = "\"" + std::string(16 * 1024, 'x') + "\"";
    }
    ASSERT_TRUE(queue.enqueue_batch(batch));
    auto leased = queue.lease(LeaseRequest{.queue = "q", .worker_id = "w", .max_jobs = 100});
    ASSERT_TRUE(leased);
    std::vector<LeasedRef> refs;
    for (const Job& job : *leased) refs.push_back(LeasedRef{job.id, *job.lease_token});
    ASSERT_TRUE(queue.complete_batch(refs));
  }
  Queue init(std::string suffix = "") {
    QueueOptions options;
    options.init_schema = true;
    auto queue = Queue::open(url() + suffix, options);
    if (!queue) throw std::runtime_error(queue.error().message);
    return std::move(*queue);
  }
  TempDir dir_;
};

TEST_F(SqliteEngineTest, TheFileIsInWalModeWithSynchronousFullUnlessTheUrlSaysOtherwise) {
  init();
  RawDb raw(path());
  EXPECT_EQ(raw.scalar("PRAGMA journal_mode"), "wal");
  sqlite::Connection::Settings settings;
  settings.path = path();
  auto full = sqlite::Connection::open(settings);
  ASSERT_TRUE(full);
  auto sync = (*full)->prepare("PRAGMA synchronous");
  ASSERT_TRUE(sync && (*sync)->step());
  EXPECT_EQ((*sync)->int64(0), 2) << "FULL is 2";
  settings.synchronous = "NORMAL";
  auto normal = sqlite::Connection::open(settings);
  ASSERT_TRUE(normal);
  auto sync_normal = (*normal)->prepare("PRAGMA synchronous");
  ASSERT_TRUE(sync_normal && (*sync_normal)->step());
  EXPECT_EQ((*sync_normal)->int64(0), 1) << "NORMAL is 1";
  auto bad = Queue::open(url() + "?synchronous=sometimes");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

// A new file gets kDefaultPageSize-byte pages, or the URL's page_size; an existing one keeps
// its own, whatever the URL says, and works as before.
TEST_F(SqliteEngineTest, ANewDatabaseGetsTheDefaultPageSizeAndAnOldOneKeepsItsOwn) {
  // From the file's header: a big-endian 16-bit number at offset 16 (1 stands for 65536).
  QueueOptions create;
  create.init_schema = true;
  auto page_size = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    unsigned char header[18] = {};
    in.read(reinterpret_cast<char*>(header), sizeof header);
    EXPECT_TRUE(in) << file;
    const int size = header[16] << 8 | header[17];
    return size == 1 ? 65536 : size;
  };
  auto works = [](const std::string& url) {
    auto queue = Queue::open(url);
    ASSERT_TRUE(queue) << queue.error().message;
    NewJob job;
    job.queue = "q";
    job.payload = "{}";
    ASSERT_TRUE(queue->enqueue(job));
    auto leased = queue->lease(LeaseRequest{.queue = "q", .worker_id = "w", .max_jobs = 10});
    ASSERT_TRUE(leased);
    ASSERT_EQ(leased->size(), 1u);
    EXPECT_TRUE(queue->complete(leased->front().id, *leased->front().lease_token));
  };
  // A file of an older release, with SQLite's default pages, upgraded by this one.
  ASSERT_NO_FATAL_FAILURE(create_as_release(8));
  ASSERT_TRUE(Queue::open(url(), create));
  EXPECT_EQ(page_size(path()), 4096);
  works(url());
  EXPECT_EQ(page_size(path()), 4096);

  const std::string fresh = dir_.file("fresh.db");
  ASSERT_TRUE(Queue::open("sqlite:" + fresh, create));
  EXPECT_EQ(page_size(fresh), sqlite::Connection::kDefaultPageSize);
  EXPECT_EQ(sqlite::Connection::kDefaultPageSize, 2048);
  works("sqlite:" + fresh + "?page_size=8192");  // the file has its pages already
  EXPECT_EQ(page_size(fresh), 2048);

  const std::string chosen = dir_.file("chosen.db");
  ASSERT_TRUE(Queue::open("sqlite:" + chosen + "?page_size=8192", create));
  EXPECT_EQ(page_size(chosen), 8192);
  works("sqlite:" + chosen);
  EXPECT_EQ(page_size(chosen), 8192);
}

TEST_F(SqliteEngineTest, ABadPageSizeIsRefusedBeforeAnythingIsCreated) {
  QueueOptions create;
  create.init_schema = true;
  for (const char* bad : {"?page_size=1000", "?page_size=256", "?page_size=131072", "?page_size=0",
                          "?page_size=-2048", "?page_size=big", "?page_size="}) {
    auto opened = Queue::open(url() + bad, create);
    ASSERT_FALSE(opened) << bad;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(opened.error().message.find("page_size"), std::string::npos)
        << opened.error().message;
    EXPECT_EQ(opened.error().message.find('\n'), std::string::npos) << opened.error().message;
    EXPECT_FALSE(std::filesystem::exists(path())) << bad;
  }
}

TEST_F(SqliteEngineTest, EachConnectionsPageCacheIsTheUrlsCacheMib) {
  init();
  auto cache_kib = [](sqlite::Connection& connection) {
    auto pragma = connection.prepare("PRAGMA cache_size");
    EXPECT_TRUE(pragma && (*pragma)->step());
    return -(*pragma)->int64(0);  // negative: KiB
  };
  sqlite::Connection::Settings settings;
  settings.path = path();
  auto by_default = sqlite::Connection::open(settings);
  ASSERT_TRUE(by_default);
  EXPECT_EQ(cache_kib(**by_default), sqlite::Connection::kDefaultCacheMib * 1024);
  settings.cache_mib = 3;
  auto three = sqlite::Connection::open(settings);
  ASSERT_TRUE(three);
  EXPECT_EQ(cache_kib(**three), 3 * 1024);

  EXPECT_TRUE(Queue::open(url() + "?cache_mib=3"));
  for (const char* bad :
       {"?cache_mib=0", "?cache_mib=-1", "?cache_mib=lots", "?cache_mib=", "?cache_mib=1048577"}) {
    auto opened = Queue::open(url() + bad);
    ASSERT_FALSE(opened) << bad;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument) << bad;
    EXPECT_NE(opened.error().message.find("cache_mib"), std::string::npos)
        << opened.error().message;
  }
}

// Checkpoints keep the WAL short while jobs are written (in the commit that leaves 1,000
// frames or more, as SQLite's automatic checkpoint does, sqlite_checkpoint_pacer.hpp: moving
// it out of the commit cost the drain 20–40%, docs/benchmarks.md, run 25). Without them the
// WAL would hold all of this test's writes, over 100 MB.
TEST_F(SqliteEngineTest, TheWalStaysShortWhileJobsAreWritten) {
  Queue queue = init();
  std::uintmax_t largest = 0;
  for (int round = 0; round < 30; ++round) {
    write_a_round(queue);
    if (HasFatalFailure()) return;
    largest = std::max(largest, wal_bytes());
  }
  EXPECT_LT(largest, std::uintmax_t{24} << 20) << "the WAL grew to " << largest << " bytes";
}

// A read transaction held by another program keeps every checkpoint from reaching the end of
// the WAL, so the file grows past the limit while it is held; once it ends, the WAL restarts
// and its first commit cuts the file back, with nobody running a checkpoint by hand.
TEST_F(SqliteEngineTest, TheWalFileShrinksBackOnceAHeldReadTransactionEnds) {
  Queue queue = init();
  const auto limit = static_cast<std::uintmax_t>(sqlite::Connection::kWalSizeLimitBytes);
  {
    RawDb reader(path());
    reader.scalar("BEGIN");
    reader.scalar("SELECT count(*) FROM sqlite_master");
    while (wal_bytes() <= limit + (8u << 20)) {
      write_a_round(queue);
      if (HasFatalFailure()) return;
    }
    reader.scalar("COMMIT");
  }
  const auto grown = wal_bytes();
  // A few rounds: one commit's checkpoint catches up, the next write restarts the WAL.
  for (int i = 0; i < 50 && wal_bytes() > limit; ++i) {
    write_a_round(queue);
    if (HasFatalFailure()) return;
  }
  EXPECT_LE(wal_bytes(), limit) << "the WAL stayed at " << wal_bytes() << " bytes after growing to "
                                << grown;
}

// A read transaction that begins on a fully checkpointed WAL reads the database file alone
// (WAL read lock 0): no checkpoint can copy a frame while it is open, yet SQLite's automatic
// checkpoint would sort the whole WAL in every commit past 1,000 frames (runs 28 and 49,
// docs/benchmarks.md). A writing connection asks for the lock first and attempts nothing while
// the reader holds it (sqlite_wal_read_lock.hpp), and checkpoints in its first commit after
// the reader has gone.
TEST_F(SqliteEngineTest, AReaderOnACheckpointedWalMakesNoCommitAttemptACheckpoint) {
  init();
  sqlite::Connection::Settings settings;
  settings.path = path();
  settings.synchronous = "NORMAL";
  auto opened = sqlite::Connection::open(settings);
  ASSERT_TRUE(opened);
  sqlite::Connection& writer = **opened;
  ASSERT_TRUE(writer.exec("CREATE TABLE filler (bytes BLOB)"));
  RawDb reader(path());
  reader.scalar("PRAGMA wal_checkpoint(TRUNCATE)");  // an empty WAL: the reader takes lock 0
  reader.scalar("BEGIN");
  reader.scalar("SELECT count(*) FROM sqlite_master");
  const auto& checkpoints = writer.checkpoints();
  const auto attempts_before = checkpoints.attempts();
  constexpr int kCommits = 3000;  // a frame or two each: past the threshold about 2,000 times
  for (int i = 0; i < kCommits; ++i) {
    ASSERT_TRUE(writer.exec("INSERT INTO filler VALUES (randomblob(3000))"));
  }
  EXPECT_EQ(checkpoints.attempts(), attempts_before) << "a commit attempted a checkpoint";
  EXPECT_GE(checkpoints.skipped_attempts(), 1000) << "the commits past the threshold";

  reader.scalar("COMMIT");
  ASSERT_TRUE(writer.exec("INSERT INTO filler VALUES (randomblob(3000))"));
  EXPECT_EQ(checkpoints.attempts(), attempts_before + 1)
      << "the first commit after the reader did not checkpoint";
  EXPECT_FALSE(checkpoints.paused()) << "that checkpoint did not copy the WAL";
  ASSERT_TRUE(writer.exec("INSERT INTO filler VALUES (randomblob(3000))"));  // restarts it
  int log = -1;
  int checkpointed = -1;
  RawDb after(path());
  ASSERT_EQ(sqlite3_wal_checkpoint_v2(after.handle(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &log,
                                      &checkpointed),
            SQLITE_OK);
  EXPECT_LT(log, 100) << "the WAL did not start over: " << log << " frames";
}

TEST_F(SqliteEngineTest, AWriterBlockedPastBusyTimeoutIsToldTheDatabaseIsUnavailable) {
  init();
  Queue queue = *Queue::open(url() + "?busy_timeout=300");
  RawDb blocker(path());
  blocker.scalar("BEGIN IMMEDIATE");
  NewJob job;
  job.queue = "q";
  const auto started = std::chrono::steady_clock::now();
  auto enqueued = queue.enqueue(job);
  const auto took = std::chrono::steady_clock::now() - started;
  blocker.scalar("ROLLBACK");
  ASSERT_FALSE(enqueued);
  EXPECT_EQ(enqueued.error().code, ErrorCode::kUnavailable) << enqueued.error().message;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 5s) << "busy_timeout=300 was not honoured";
  EXPECT_TRUE(queue.enqueue(job)) << "the database did not work again once the lock was gone";
}

TEST_F(SqliteEngineTest, ANewerSchemaIsRefused) {
  init();
  RawDb(path()).scalar("INSERT INTO readpast_schema_version (version) VALUES (99)");
  auto opened = Queue::open(url());
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().code, ErrorCode::kSchema);
  EXPECT_NE(opened.error().message.find("newer"), std::string::npos);
  QueueOptions options;
  options.init_schema = true;
  auto init_again = Queue::open(url(), options);
  ASSERT_FALSE(init_again);
  EXPECT_EQ(init_again.error().code, ErrorCode::kSchema);
}

TEST_F(SqliteEngineTest, InitUpgradesADatabaseThatAnEarlierReleaseCreated) {
  ASSERT_NO_FATAL_FAILURE(create_as_release(1));
  RawDb(path()).scalar(
      "INSERT INTO readpast_jobs (queue, run_at, enqueued_at, payload) "
      "VALUES ('q', 0, 0, 'from release 1')");
  auto old = Queue::open(url());
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, ErrorCode::kSchema);
  EXPECT_NE(old.error().message.find("older"), std::string::npos) << old.error().message;

  Queue queue = init();
  EXPECT_EQ(*queue.init(), sqlite::kSchemaVersion);
  ASSERT_TRUE(queue.pause("q"));
  EXPECT_TRUE(queue.lease(LeaseRequest{"q", "w", 1})->empty());
  ASSERT_TRUE(queue.resume("q"));
  auto leased = queue.lease(LeaseRequest{"q", "w", 1});
  ASSERT_TRUE(leased && leased->size() == 1);
  EXPECT_EQ(leased->front().payload, "from release 1");
}

TEST_F(SqliteEngineTest, UpgradingFromVersion2KeepsEveryJobAndNeverReusesAnId) {
  ASSERT_NO_FATAL_FAILURE(create_as_release(2));
  {
    RawDb raw(path());
    for (const char* values :
         {"('q', 'available', NULL, 'first', 0, 0)", "('q', 'running', 'k', 'second', 0, 0)",
          "('q', 'available', NULL, 'x', 0, 0)"}) {
      raw.scalar(std::string("INSERT INTO readpast_jobs (queue, state, unique_key, payload, "
                             "run_at, enqueued_at) VALUES ") +
                 values);
    }
    raw.scalar("UPDATE readpast_jobs SET attempts = 1, lease_token = 'aa' WHERE id = 2");
    raw.scalar("DELETE FROM readpast_jobs WHERE id = 3");  // the counter stays at 3
  }

  Queue queue = init();
  EXPECT_EQ(*queue.init(), sqlite::kSchemaVersion);
  auto first = queue.get(1);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->payload, "first");
  EXPECT_EQ(first->state, JobState::kAvailable);
  auto second = queue.get(2);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->state, JobState::kRunning);
  EXPECT_EQ(second->attempts, 1);
  EXPECT_EQ(second->unique_key, "k");
  EXPECT_EQ(queue.get(3).error().code, ErrorCode::kNotFound);

  NewJob job;
  job.queue = "q";
  auto added = queue.enqueue(job);
  ASSERT_TRUE(added);
  EXPECT_EQ(added->id, 4) << "the AUTOINCREMENT counter was not carried over";
  job.unique_key = "k";
  auto keyed = queue.enqueue(job);
  ASSERT_TRUE(keyed);
  EXPECT_FALSE(keyed->inserted) << "the unique index was not recreated";
  EXPECT_EQ(keyed->id, 2);
  RawDb raw(path());
  EXPECT_THROW(raw.scalar("INSERT INTO readpast_jobs (queue, run_at, enqueued_at) "
                          "VALUES ('no good', 0, 0)"),
               std::runtime_error)
      << "the queue-name trigger was not recreated";
  // lease, expiry, unique, finished, queue_state, and since migration 9 notify and group.
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM sqlite_master WHERE tbl_name = 'readpast_jobs' "
                       "AND type = 'index' AND sql IS NOT NULL"),
            "7");
  auto leased = queue.lease(LeaseRequest{"q", "w", 10});
  ASSERT_TRUE(leased);
  ASSERT_EQ(leased->size(), 2u);
  EXPECT_EQ(leased->front().id, 1);
  EXPECT_EQ(leased->back().id, 4);
}

// SQLite evaluates an IN list of three or more values, an IN (sub-select) and RETURNING
// through ephemeral tables: b-trees with a page cache of their own that every execution
// allocates and frees, which cost more than the rest of such a short statement. The
// statements each job runs build none, and a lease of one job only RETURNING's.
TEST_F(SqliteEngineTest, TheStatementsEveryJobRunsBuildNoEphemeralTable) {
  init();
  RawDb raw(path());
  auto ephemeral_tables = [&](const char* sql) {
    const std::string program = raw.opcodes(sql);
    int count = 0;
    for (auto at = program.find("OpenEphemeral\n"); at != std::string::npos;
         at = program.find("OpenEphemeral\n", at + 1)) {
      ++count;
    }
    return count;
  };
  for (const char* sql : {sqlite::sql::insert_job::text, sqlite::sql::complete::text,
                          sqlite::sql::complete_delete::text, sqlite::sql::extend::text,
                          sqlite::sql::release::text}) {
    EXPECT_EQ(ephemeral_tables(sql), 0) << sql << "\n" << raw.opcodes(sql);
  }
  EXPECT_EQ(ephemeral_tables(sqlite::sql::lease_one::text), 1)
      << raw.opcodes(sqlite::sql::lease_one::text);
}

TEST_F(SqliteEngineTest, TheDatabaseRefusesQueueNamesNoWorkerCouldUse) {
  init();
  RawDb raw(path());
  for (const std::string& bad :
       std::vector<std::string>{"", "bad name", "-lead", "x;y", std::string(129, 'a')}) {
    EXPECT_THROW(raw.scalar("INSERT INTO readpast_jobs (queue, run_at, enqueued_at) VALUES ('" +
                            bad + "', 0, 0)"),
                 std::runtime_error)
        << "'" << bad << "' was stored";
  }
  EXPECT_NO_THROW(raw.scalar(
      "INSERT INTO readpast_jobs (queue, run_at, enqueued_at) VALUES ('ok_Name.1-x', 0, 0)"));
  EXPECT_THROW(raw.scalar("UPDATE readpast_jobs SET queue = 'no good'"), std::runtime_error);
}

TEST_F(SqliteEngineTest, EveryHotPathUsesItsPartialIndex) {
  Queue queue = init();
  std::vector<NewJob> jobs(2000);
  for (auto& job : jobs) job.queue = "q";
  ASSERT_TRUE(queue.enqueue_batch(jobs));
  RawDb raw(path());
  raw.scalar("ANALYZE");
  auto expect_index = [&](const char* sql, const std::string& index) {
    const std::string plan = raw.plan(sql);
    EXPECT_NE(plan.find("INDEX " + index + " ("), std::string::npos) << index << " not used by:\n"
                                                                     << sql << "\n"
                                                                     << plan;
  };
  expect_index(sqlite::sql::lease::text, "readpast_jobs_lease");
  expect_index(sqlite::sql::lease_one::text, "readpast_jobs_lease");
  expect_index(sqlite::sql::rescue_expired::text, "readpast_jobs_expiry");
  expect_index(sqlite::sql::find_unique_holder::text, "readpast_jobs_unique");
  expect_index(sqlite::sql::purge::text, "readpast_jobs_finished");
}

// What the operator's commands run must not walk the whole table either, and a database
// has no statistics unless someone runs ANALYZE: so this is checked without them.
TEST_F(SqliteEngineTest, ListStatsAndRetryWalkAnIndexRangeWithoutStatistics) {
  Queue queue = init();
  RawDb raw(path());
  auto expect_search = [&](const char* sql, std::initializer_list<std::string> uses) {
    const std::string plan = raw.plan(sql);
    EXPECT_EQ(plan.find("SCAN readpast_jobs\n"), std::string::npos) << sql << "\n" << plan;
    for (const auto& use : uses) {
      EXPECT_NE(plan.find(use), std::string::npos) << use << " not in the plan of:\n"
                                                   << sql << "\n"
                                                   << plan;
    }
  };
  const std::string by_state = "INDEX readpast_jobs_queue_state (queue=? AND state=? AND id>?)";
  const std::string running = "INDEX readpast_jobs_expiry (queue=?)";
  // The lists take an id range from both sides (after_id, before_id), either way round.
  const std::string by_state_range =
      "INDEX readpast_jobs_queue_state (queue=? AND state=? AND id>? AND id<?)";
  expect_search(sqlite::sql::list_queue_state::text, {by_state_range});
  expect_search(sqlite::sql::list_queue_state_desc::text, {by_state_range});
  expect_search(sqlite::sql::list_queue_running::text, {running});
  expect_search(sqlite::sql::list_queue_running_desc::text, {running});
  expect_search(sqlite::sql::list_state::text, {"INTEGER PRIMARY KEY (rowid>? AND rowid<?)"});
  expect_search(sqlite::sql::list_state_desc::text, {"INTEGER PRIMARY KEY (rowid>? AND rowid<?)"});
  expect_search(sqlite::sql::retry_candidates::text, {by_state});
  expect_search(sqlite::sql::stats_queue::text,
                {"INDEX readpast_jobs_queue_state (queue=?)", running});
  expect_search(sqlite::sql::stats_all::text,
                {"SCAN readpast_jobs USING INDEX readpast_jobs_queue_state",
                 "SCAN readpast_jobs USING INDEX readpast_jobs_expiry"});
  expect_search(sqlite::sql::finished_since::text, {"COVERING INDEX readpast_jobs_finished"});
}

// Schema version 4: a job's lease and its settling each move one entry of
// readpast_jobs_queue_state, not two, because running jobs have none.
TEST_F(SqliteEngineTest, RunningJobsHaveNoEntryInTheQueueStateIndexAfterAnUpgradeFrom3) {
  ASSERT_NO_FATAL_FAILURE(create_as_release(3));
  RawDb raw(path());
  raw.scalar(
      "INSERT INTO readpast_jobs (queue, state, run_at, enqueued_at, lease_token, "
      "lease_expires_at) VALUES ('q', 'running', 0, 0, 'aa', 9000000000000000)");
  Queue queue = init();
  // Upgraded through 4 to the latest version.
  EXPECT_EQ(raw.scalar("SELECT max(version) FROM readpast_schema_version"),
            std::to_string(sqlite::kSchemaVersion));
  NewJob job;
  job.queue = "q";
  ASSERT_TRUE(queue.enqueue_batch(std::vector<NewJob>(3, job)));
  ASSERT_EQ(queue.lease(LeaseRequest{"q", "w", 2})->size(), 2u);
  EXPECT_EQ(raw.scalar("SELECT sql FROM sqlite_master WHERE name = 'readpast_jobs_queue_state'"),
            "CREATE INDEX readpast_jobs_queue_state ON readpast_jobs (queue, state, id)\n"
            "  WHERE state <> 'running'");
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM readpast_jobs WHERE state = 'running'"), "3");
  ListRequest request;
  request.queue = "q";
  request.state = JobState::kRunning;
  auto listed = queue.list(request);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ(listed->front().id, 1) << "the job from release 3 is listed first";
  auto stats = queue.stats("q");
  ASSERT_TRUE(stats && stats->size() == 1u);
  EXPECT_EQ(stats->front().running, 3);
  EXPECT_EQ(stats->front().available, 1);
}

// Schema version 6: a schedule records the job of its latest tick. A schedule of version 5
// (which had ticked) keeps its definition and tick; its last job is unknown until it ticks.
TEST_F(SqliteEngineTest, ASchedulesLastJobIsRecordedAfterAnUpgradeFrom5) {
  ASSERT_NO_FATAL_FAILURE(create_as_release(5));
  RawDb raw(path());
  raw.scalar(
      "INSERT INTO readpast_schedules (name, queue, spec, payload, priority, max_attempts, "
      "created_at, last_tick_at) VALUES ('beat', 'ticks', 'every 1m', 'p', 100, 25, 0, 60000000)");
  Queue queue = init();
  EXPECT_EQ(raw.scalar("SELECT max(version) FROM readpast_schema_version"),
            std::to_string(sqlite::kSchemaVersion));
  auto schedules = queue.list_schedules();
  ASSERT_TRUE(schedules && schedules->size() == 1u);
  EXPECT_EQ(schedules->front().spec, "every 1m");
  ASSERT_TRUE(schedules->front().last_tick.has_value());
  EXPECT_EQ(schedules->front().last_tick->time_since_epoch(), std::chrono::minutes(1));
  EXPECT_FALSE(schedules->front().last_job.has_value());
  auto enqueued = queue.enqueue_due();
  ASSERT_TRUE(enqueued && enqueued->size() == 1u);
  schedules = queue.list_schedules();
  ASSERT_TRUE(schedules && schedules->front().last_job.has_value());
  EXPECT_EQ(*schedules->front().last_job, enqueued->front().id);
}

// Schema version 7: progress, error history and unique windows. Jobs of version 6 keep what
// they had (a dead job its last_error, with no history before the upgrade); their history
// starts with the next failure and goes with the job.
TEST_F(SqliteEngineTest, ProgressErrorsAndWindowsWorkAfterAnUpgradeFrom6) {
  ASSERT_NO_FATAL_FAILURE(create_as_release(6));
  RawDb raw(path());
  raw.scalar(
      "INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts, "
      "enqueued_at, finished_at, last_error, payload) "
      "VALUES ('q', 'dead', 100, 0, 1, 1, 0, 0, 'from release 6', x'')");
  Queue queue = init();
  EXPECT_EQ(raw.scalar("SELECT max(version) FROM readpast_schema_version"),
            std::to_string(sqlite::kSchemaVersion));
  auto old = queue.get(1);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->last_error, "from release 6");
  EXPECT_TRUE(old->errors.empty());
  EXPECT_FALSE(old->progress.has_value());

  NewJob job;
  job.queue = "q";
  job.max_attempts = 1;
  const JobId id = queue.enqueue(job)->id;
  LeaseRequest request;
  request.queue = "q";
  request.worker_id = "w";
  auto leased = queue.lease(request);
  ASSERT_TRUE(leased && leased->size() == 1u);
  ASSERT_TRUE(queue.progress(id, *leased->front().lease_token, "{\"n\": 1}"));
  ASSERT_TRUE(queue.fail(id, *leased->front().lease_token, "after the upgrade"));
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM readpast_job_errors"), "1");
  // Purging both dead jobs leaves no history behind (the trigger of version 7).
  PurgeRequest purge;
  purge.queue = "q";
  purge.state = JobState::kDead;
  EXPECT_EQ(*queue.purge(purge), 2);
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM readpast_job_errors"), "0");

  NewJob windowed;
  windowed.queue = "u";
  windowed.unique_key = "k";
  windowed.unique_for = std::chrono::hours(1);
  EXPECT_TRUE(queue.enqueue(windowed)->inserted);
  EXPECT_FALSE(queue.enqueue(windowed)->inserted);
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM readpast_unique_windows"), "1");
}

// Closed unique windows do not pile up: the retention pass forgets them, open ones stay.
TEST_F(SqliteEngineTest, RetentionForgetsClosedUniqueWindows) {
  Queue queue = init();
  RawDb raw(path());
  NewJob job;
  job.queue = "u";
  job.unique_key = "closing";
  job.unique_for = std::chrono::milliseconds(100);
  ASSERT_TRUE(queue.enqueue(job)->inserted);
  job.unique_key = "open";
  job.unique_for = std::chrono::hours(1);
  ASSERT_TRUE(queue.enqueue(job)->inserted);
  EXPECT_EQ(raw.scalar("SELECT count(*) FROM readpast_unique_windows"), "2");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(queue.apply_retention("u"));
  EXPECT_EQ(raw.scalar("SELECT group_concat(unique_key) FROM readpast_unique_windows"), "open");
}

// Migration 9 (dependencies) rebuilds the jobs table: every row, a running job's lease and a
// held unique key survive it, ids are never reused, and a job can then wait for the others.
TEST_F(SqliteEngineTest, JobsInFlightSurviveTheUpgradeToDependencies) {
  ASSERT_NO_FATAL_FAILURE(create_as_release(8));
  {
    RawDb raw(path());
    raw.scalar(
        "INSERT INTO readpast_jobs (queue, state, attempts, lease_token, leased_by, "
        "lease_expires_at, run_at, enqueued_at, payload) VALUES ('q', 'running', 1, "
        "'00000000000000000000000000000001', 'w', 9000000000000000, 0, 0, 'running')");
    raw.scalar(
        "INSERT INTO readpast_jobs (queue, unique_key, run_at, enqueued_at, payload) "
        "VALUES ('q', 'k', 0, 0, 'held')");
    raw.scalar(
        "INSERT INTO readpast_jobs (queue, run_at, enqueued_at, payload) "
        "VALUES ('q', 0, 0, 'gone')");
    raw.scalar("DELETE FROM readpast_jobs WHERE id = 3");  // the counter stays at 3
  }
  Queue queue = init();
  EXPECT_EQ(*queue.init(), sqlite::kSchemaVersion);
  NewJob after_both;
  after_both.queue = "next";
  after_both.after = {1, 2};
  auto waiting = queue.enqueue(after_both);
  ASSERT_TRUE(waiting) << waiting.error().message;
  EXPECT_EQ(waiting->id, 4) << "an id was reused";
  EXPECT_EQ(queue.get(waiting->id)->state, JobState::kWaiting);
  NewJob same_key;
  same_key.queue = "q";
  same_key.unique_key = "k";
  EXPECT_EQ(queue.enqueue(same_key)->id, 2) << "the held key was lost";
  ASSERT_TRUE(queue.complete(1, *LeaseToken::from_hex("00000000000000000000000000000001")));
  auto leased = queue.lease(LeaseRequest{"q", "w", 1});
  ASSERT_TRUE(leased && leased->size() == 1u);
  ASSERT_TRUE(queue.complete(leased->front().id, *leased->front().lease_token));
  ASSERT_TRUE(queue.resolve_dependencies());
  EXPECT_EQ(queue.get(waiting->id)->state, JobState::kAvailable);
}

}  // namespace
}  // namespace readpast::test
