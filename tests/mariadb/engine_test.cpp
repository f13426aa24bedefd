// MariaDB-specific behaviour: what a bad login, an unknown database or a server that is down
// says (one line, password redacted), and that the engine comes back after a restart.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"

namespace readpast {
namespace {

using test::MariadbServer;

constexpr std::string_view kSecret = "s3cr3tPW";

QueueOptions init_options() {
  QueueOptions options;
  options.init_schema = true;
  return options;
}

void expect_one_line_without_secret(const Error& error) {
  EXPECT_EQ(error.message.find(kSecret), std::string::npos) << error.message;
  EXPECT_EQ(error.message.find('\n'), std::string::npos) << error.message;
}

TEST(MariadbEngine, WrongPasswordIsOneLineWithoutThePassword) {
  auto& server = MariadbServer::shared();
  server.execute("CREATE USER IF NOT EXISTS 'pw_user'@'%' IDENTIFIED BY 'right-one'");
  server.execute("GRANT ALL PRIVILEGES ON *.* TO 'pw_user'@'%'");
  const std::string url = "mariadb://pw_user:" + std::string(kSecret) +
                          "@127.0.0.1:" + std::to_string(server.port()) + "/mysql";
  auto queue = Queue::open(url, init_options());
  ASSERT_FALSE(queue.has_value());
  EXPECT_EQ(queue.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(queue.error().message.find("Access denied"), std::string::npos)
      << queue.error().message;
  expect_one_line_without_secret(queue.error());
}

TEST(MariadbEngine, RightPasswordWorks) {
  auto& server = MariadbServer::shared();
  server.execute("CREATE USER IF NOT EXISTS 'pw_user2'@'%' IDENTIFIED BY 'p@ss/w:rd'");
  server.execute("GRANT ALL PRIVILEGES ON *.* TO 'pw_user2'@'%'");
  server.execute("CREATE DATABASE IF NOT EXISTS pw_db");
  const std::string url =
      "mariadb://pw_user2:p%40ss%2Fw%3Ard@127.0.0.1:" + std::to_string(server.port()) + "/pw_db";
  auto queue = Queue::open(url, init_options());
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
}

TEST(MariadbEngine, UnknownDatabaseIsOneLine) {
  auto& server = MariadbServer::shared();
  auto queue = Queue::open(server.url("no_such_database"), init_options());
  ASSERT_FALSE(queue.has_value());
  EXPECT_NE(queue.error().message.find("no_such_database"), std::string::npos)
      << queue.error().message;
  expect_one_line_without_secret(queue.error());
}

TEST(MariadbEngine, ServerDownIsUnavailable) {
  const std::string url = "mariadb://u:" + std::string(kSecret) + "@127.0.0.1:1/jobs";
  auto queue = Queue::open(url, init_options());
  ASSERT_FALSE(queue.has_value());
  EXPECT_EQ(queue.error().code, ErrorCode::kUnavailable);
  expect_one_line_without_secret(queue.error());
}

TEST(MariadbEngine, SchemaMissingWithoutInit) {
  auto& server = MariadbServer::shared();
  auto queue = Queue::open(server.fresh_database_url(), QueueOptions{});
  ASSERT_FALSE(queue.has_value());
  EXPECT_EQ(queue.error().code, ErrorCode::kSchema) << queue.error().message;
}

TEST(MariadbEngine, ANewerSchemaIsRefusedAndLeftAlone) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  ASSERT_TRUE(Queue::open(url, init_options()).has_value());
  const std::string database = url.substr(url.rfind('/') + 1);
  server.execute("INSERT INTO readpast_schema_version (version) VALUES (99)", database);
  for (const QueueOptions& options : {QueueOptions{}, init_options()}) {
    auto opened = Queue::open(url, options);
    ASSERT_FALSE(opened.has_value());
    EXPECT_EQ(opened.error().code, ErrorCode::kSchema) << opened.error().message;
    EXPECT_NE(opened.error().message.find("newer"), std::string::npos) << opened.error().message;
    expect_one_line_without_secret(opened.error());
  }
}

// Migration 3 (sql/migrations/0003_*.sql) on a database at version 2 with jobs in every state:
// the indexes of version 2 are put back and version 3's taken away, then `init` upgrades.
TEST(MariadbEngine, AVersionTwoDatabaseUpgradesInPlaceWithItsJobs) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  const std::string database = url.substr(url.rfind('/') + 1);
  auto before = Queue::open(url, init_options());
  ASSERT_TRUE(before.has_value()) << before.error().message;
  std::vector<JobId> ids;
  for (const char* payload : {"done", "dead", "running", "waiting"}) {
    NewJob job;
    job.queue = "up";
    job.payload = payload;
    auto enqueued = before->enqueue(job);
    ASSERT_TRUE(enqueued.has_value()) << enqueued.error().message;
    ids.push_back(enqueued->id);
  }
  auto leased = before->lease(LeaseRequest{.queue = "up", .worker_id = "w", .max_jobs = 3});
  ASSERT_TRUE(leased.has_value() && leased->size() == 3u);
  ASSERT_TRUE(before->complete((*leased)[0].id, *(*leased)[0].lease_token).has_value());
  FailOptions no_retry;
  no_retry.no_retry = true;
  ASSERT_TRUE(before->fail((*leased)[1].id, *(*leased)[1].lease_token, "boom", no_retry));
  const Job running = (*leased)[2];
  before = fail_with(Error::unavailable("closed"));

  server.execute(
      "ALTER TABLE readpast_jobs DROP INDEX readpast_jobs_finished_at, "
      "DROP COLUMN finished_state, "
      "ADD KEY readpast_jobs_expiry (queue, state, lease_expires_at), "
      "ADD KEY readpast_jobs_finished (queue, state, finished_at), "
      "ADD KEY readpast_jobs_queue_state (queue, state, id), "
      "ADD KEY readpast_jobs_state (state, id)",
      database);
  server.execute("DELETE FROM readpast_schema_version WHERE version > 2", database);
  ASSERT_EQ(Queue::open(url, QueueOptions{}).error().code, ErrorCode::kSchema);

  auto after = Queue::open(url, init_options());
  ASSERT_TRUE(after.has_value()) << after.error().message;
  // The lease taken before the upgrade still settles, and only with its token.
  EXPECT_TRUE(after->complete(running.id, *running.lease_token).has_value());
  ListRequest dead_jobs;
  dead_jobs.queue = "up";
  dead_jobs.state = JobState::kDead;
  auto dead = after->list(dead_jobs);
  ASSERT_TRUE(dead.has_value()) << dead.error().message;
  ASSERT_EQ(dead->size(), 1u);
  EXPECT_EQ(dead->front().id, ids[1]);
  ListRequest succeeded_jobs;
  succeeded_jobs.state = JobState::kSucceeded;
  auto succeeded = after->list(succeeded_jobs);
  ASSERT_TRUE(succeeded.has_value()) << succeeded.error().message;
  ASSERT_EQ(succeeded->size(), 2u);
  EXPECT_EQ(succeeded->front().id, ids[0]);
  EXPECT_EQ(succeeded->back().id, ids[2]);
  PurgeRequest purge;
  purge.queue = "up";
  purge.state = JobState::kSucceeded;
  auto purged = after->purge(purge);
  ASSERT_TRUE(purged.has_value()) << purged.error().message;
  EXPECT_EQ(*purged, 2);
  auto next = after->lease(LeaseRequest{.queue = "up", .worker_id = "w"});
  ASSERT_TRUE(next.has_value() && next->size() == 1u);
  EXPECT_EQ(next->front().id, ids[3]);
}

TEST(MariadbEngine, ComesBackAfterTheServerIsKilled) {
  auto& server = MariadbServer::shared();
  auto queue = Queue::open(server.fresh_database_url(), init_options());
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
  NewJob job;
  job.queue = "q";
  job.payload = "before";
  ASSERT_TRUE(queue->enqueue(job).has_value());
  server.restart_immediate();
  // The pooled connection is stale: the first call after the restart may fail once with
  // kUnavailable, never lose the job.
  Result<std::vector<Job>> leased = fail_with(Error::unavailable("not yet"));
  for (int i = 0; i < 100 && !leased; ++i) {
    leased = queue->lease(LeaseRequest{.queue = "q", .worker_id = "w"});
    if (!leased) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(leased.has_value()) << leased.error().message;
  ASSERT_EQ(leased->size(), 1u);
  EXPECT_EQ(leased->front().payload, "before");
}

// One round of resolve_dependencies tells a hundred jobs in a dozen statements or so
// (src/engines/mariadb/mariadb_dependency_round.hpp), not one statement per edge: with those,
// MariaDB's rounds were the slowest part of a drain of dependent jobs. Counted with the
// server's Questions (statements from clients; this test program is the server's only
// client).
NewJob job_of(std::string queue_name) {
  NewJob job;
  job.queue = std::move(queue_name);
  job.payload = "p";
  return job;
}

TEST(MariadbEngine, ARoundTellsAHundredJobsInAFewStatements) {
  auto& server = MariadbServer::shared();
  auto queue = Queue::open(server.fresh_database_url(), init_options());
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
  constexpr int kRoots = 100;  // a round's jobs (core/dependencies.hpp, kResolveJobs)
  std::vector<NewJob> roots(kRoots, job_of("roots"));
  auto root_ids = queue->enqueue_batch(roots);
  ASSERT_TRUE(root_ids.has_value()) << root_ids.error().message;
  auto held = queue->enqueue(job_of("held"));
  ASSERT_TRUE(held.has_value()) << held.error().message;
  auto held_lease = queue->lease(LeaseRequest{.queue = "held", .worker_id = "w"});
  ASSERT_TRUE(held_lease.has_value() && held_lease->size() == 1u);
  // Each root has three dependents: one waits for it alone, one for it and the next root
  // (two edges met in the same round), one for it and the held job (still waiting after).
  std::vector<NewJob> dependents;
  for (int i = 0; i < kRoots; ++i) {
    const JobId root = (*root_ids)[static_cast<std::size_t>(i)].id;
    const JobId next = (*root_ids)[static_cast<std::size_t>((i + 1) % kRoots)].id;
    for (std::vector<JobId> after : {std::vector<JobId>{root}, std::vector<JobId>{root, next},
                                     std::vector<JobId>{root, held->id}}) {
      dependents.push_back(job_of("deps"));
      dependents.back().after = std::move(after);
    }
  }
  ASSERT_TRUE(queue->enqueue_batch(dependents).has_value());
  auto leased = queue->lease(LeaseRequest{.queue = "roots", .worker_id = "w", .max_jobs = kRoots});
  ASSERT_TRUE(leased.has_value() && leased->size() == static_cast<std::size_t>(kRoots));
  std::vector<LeasedRef> refs;
  for (const Job& job : *leased) refs.push_back(LeasedRef{job.id, *job.lease_token});
  ASSERT_TRUE(queue->complete_batch(refs).has_value());

  auto questions = [&] {
    return std::stoll(
        server.query_value("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                           "WHERE VARIABLE_NAME = 'QUESTIONS'"));
  };
  const long long before = questions();
  auto told = queue->resolve_dependencies();              // rounds until one finds nothing
  const long long statements = questions() - before - 1;  // less the second count's own
  ASSERT_TRUE(told.has_value()) << told.error().message;
  EXPECT_LE(statements, 40) << "statements in the rounds that told " << kRoots << " jobs";

  auto stats = queue->stats("deps");
  ASSERT_TRUE(stats.has_value() && stats->size() == 1u);
  EXPECT_EQ(stats->front().available, 2 * kRoots);
  EXPECT_EQ(stats->front().waiting, kRoots);
}

}  // namespace
// Migration 5 (sql/migrations/0005_*.sql): a schedule records the job of its latest tick. On
// a database at version 4 (its column taken away again) a schedule that had ticked keeps its
// definition and tick; its last job is unknown until it ticks again.
TEST(MariadbEngine, ASchedulesLastJobIsRecordedAfterAnUpgradeFrom4) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  const std::string database = url.substr(url.rfind('/') + 1);
  ASSERT_TRUE(Queue::open(url, init_options()).has_value());
  server.execute("ALTER TABLE readpast_schedules DROP COLUMN last_job_id", database);
  server.execute("DELETE FROM readpast_schema_version WHERE version > 4", database);
  server.execute(
      "INSERT INTO readpast_schedules (name, queue, spec, payload, priority, max_attempts, "
      "created_at, last_tick_at) VALUES ('beat', 'ticks', 'every 1m', 'p', 100, 25, 0, 60000000)",
      database);
  ASSERT_EQ(Queue::open(url, QueueOptions{}).error().code, ErrorCode::kSchema);

  auto queue = Queue::open(url, init_options());
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
  auto schedules = queue->list_schedules();
  ASSERT_TRUE(schedules.has_value() && schedules->size() == 1u);
  ASSERT_TRUE(schedules->front().last_tick.has_value());
  EXPECT_EQ(schedules->front().last_tick->time_since_epoch(), std::chrono::minutes(1));
  EXPECT_FALSE(schedules->front().last_job.has_value());
  auto enqueued = queue->enqueue_due();
  ASSERT_TRUE(enqueued.has_value() && enqueued->size() == 1u);
  schedules = queue->list_schedules();
  ASSERT_TRUE(schedules.has_value() && schedules->front().last_job.has_value());
  EXPECT_EQ(*schedules->front().last_job, enqueued->front().id);
}

// Migration 6: progress, error history and unique windows. A job of version 5 keeps its
// last_error with no history before the upgrade; the features work at once after it.
TEST(MariadbEngine, ProgressErrorsAndWindowsWorkAfterAnUpgradeFrom5) {
  auto& server = MariadbServer::shared();
  const std::string url = server.fresh_database_url();
  const std::string database = url.substr(url.rfind('/') + 1);
  ASSERT_TRUE(Queue::open(url, init_options()).has_value());
  server.execute("DROP TABLE readpast_job_errors", database);
  server.execute("DROP TABLE readpast_unique_windows", database);
  server.execute("DROP FUNCTION readpast_progress", database);
  server.execute("ALTER TABLE readpast_jobs DROP COLUMN progress", database);
  server.execute("DELETE FROM readpast_schema_version WHERE version > 5", database);
  server.execute(
      "INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts, "
      "enqueued_at, finished_at, last_error, payload) "
      "VALUES ('q', 'dead', 100, 0, 1, 1, 0, 0, 'from release 5', '')",
      database);
  ASSERT_EQ(Queue::open(url, QueueOptions{}).error().code, ErrorCode::kSchema);

  auto queue = Queue::open(url, init_options());
  ASSERT_TRUE(queue.has_value()) << queue.error().message;
  auto old = queue->get(1);
  ASSERT_TRUE(old.has_value()) << old.error().message;
  EXPECT_EQ(old->last_error, "from release 5");
  EXPECT_TRUE(old->errors.empty());
  EXPECT_FALSE(old->progress.has_value());

  NewJob job;
  job.queue = "q";
  job.max_attempts = 1;
  const JobId id = queue->enqueue(job)->id;
  LeaseRequest request;
  request.queue = "q";
  request.worker_id = "w";
  auto leased = queue->lease(request);
  ASSERT_TRUE(leased.has_value() && leased->size() == 1u);
  ASSERT_TRUE(queue->progress(id, *leased->front().lease_token, "[1]"));
  ASSERT_TRUE(queue->fail(id, *leased->front().lease_token, "after the upgrade"));
  auto failed = queue->get(id);
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->progress, "[1]");
  ASSERT_EQ(failed->errors.size(), 1u);
  EXPECT_EQ(failed->errors[0].error, "after the upgrade");
  PurgeRequest purge;
  purge.queue = "q";
  purge.state = JobState::kDead;
  EXPECT_EQ(*queue->purge(purge), 2);
  // The history went with its job: the foreign key refuses an entry of a job that is gone.
  EXPECT_ANY_THROW(
      server.execute("INSERT INTO readpast_job_errors (job_id, attempt, at, error) VALUES (" +
                         std::to_string(id) + ", 1, 0, 'orphan')",
                     database));

  NewJob windowed;
  windowed.queue = "u";
  windowed.unique_key = "k";
  windowed.unique_for = std::chrono::hours(1);
  EXPECT_TRUE(queue->enqueue(windowed)->inserted);
  EXPECT_FALSE(queue->enqueue(windowed)->inserted);
}

}  // namespace readpast
