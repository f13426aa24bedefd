// Waiting jobs in readpast.waiting (migration 17): a job that waits for others is kept out of
// live, moves to live when its last dependency succeeds, back to waiting when it is retried
// while one is unmet, and to done when it is cancelled; its unique key and error history go
// with it. The contract's cases (docs/workflows.md) are in the shared conformance suite; these
// check where the rows are, and the two races a move brings: a statement that waits for a row
// another transaction moves does not follow it into its new table.
#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "moving_jobs.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

using WaitingJobsTest = MovingJobsTest;

TEST_F(WaitingJobsTest, AJobWaitsInItsOwnTableAndMovesToLiveWhenItsDependencySucceeds) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId first = must(queue.enqueue(job("q"))).id;
  const JobId second = dependent_of(queue, first, "k");
  EXPECT_EQ(table_of(db, second), "waiting");
  EXPECT_EQ(key_holder(db, "k"), std::to_string(second));
  EXPECT_EQ(db.scalar("SELECT notify FROM readpast.live WHERE id = " + std::to_string(first)), "t");
  // The SQL function's dependent waits there too.
  const std::string by_sql = db.scalar("SELECT readpast.enqueue_after(ARRAY[" +
                                       std::to_string(first) + "]::bigint[], 'q')");
  EXPECT_EQ(table_of(db, std::stoll(by_sql)), "waiting");

  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, first) << "a waiting job was handed out";
  must(queue.complete(first, *leased[0].lease_token));
  must(queue.resolve_dependencies());
  EXPECT_EQ(table_of(db, second), "live");
  EXPECT_EQ(must(queue.get(second)).state, JobState::kAvailable);
  EXPECT_EQ(key_holder(db, "k"), std::to_string(second)) << "the move gave the key back";
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.waiting"), "0");
  auto next = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5}));
  EXPECT_EQ(next.size(), 2u);
}

TEST_F(WaitingJobsTest, ARetriedDependentWaitsAgainWithItsKeyAndHistory) {
  Queue queue = open();
  SqlConnection db = sql();
  NewJob once = job("q");
  once.max_attempts = 1;
  const JobId first = must(queue.enqueue(once)).id;
  const JobId second = dependent_of(queue, first, "k");
  db.exec("INSERT INTO readpast.job_errors (job_id, attempt, at, error) VALUES (" +
          std::to_string(second) + ", 1, now(), 'an earlier life')");
  db.exec("UPDATE readpast.waiting SET last_error = 'an earlier life' WHERE id = " +
          std::to_string(second));

  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(must(queue.fail(first, *leased[0].lease_token, "boom")), FailOutcome::kDead);
  must(queue.resolve_dependencies());
  EXPECT_EQ(table_of(db, second), "done");
  EXPECT_EQ(must(queue.get(second)).state, JobState::kCancelled);
  EXPECT_EQ(key_holder(db, "k"), "") << "a cancelled job kept its key";

  // Retried in this order, the dependent finds its dependency available again: it waits.
  EXPECT_EQ(must(queue.retry(std::vector<JobId>{first})).size(), 1u);
  EXPECT_EQ(must(queue.retry(std::vector<JobId>{second})).size(), 1u);
  EXPECT_EQ(table_of(db, second), "waiting");
  EXPECT_EQ(must(queue.get(second)).state, JobState::kWaiting);
  EXPECT_EQ(key_holder(db, "k"), std::to_string(second));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.job_errors WHERE job_id = " +
                      std::to_string(second)),
            "1")
      << "the move to waiting lost the history";
  NewJob same = job("q");
  same.unique_key = "k";
  EXPECT_EQ(must(queue.enqueue(same)).id, second);

  leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, first);
  must(queue.complete(first, *leased[0].lease_token));
  must(queue.resolve_dependencies());
  EXPECT_EQ(table_of(db, second), "live");
  EXPECT_EQ(must(queue.get(second)).errors.size(), 1u);
}

TEST_F(WaitingJobsTest, EditsThroughTheViewMoveAJobBetweenTheTables) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId first = must(queue.enqueue(job("q"))).id;
  const JobId second = dependent_of(queue, first, "k");
  const std::string id = std::to_string(second);

  // Out of waiting with a new key: the old key is given back, the new one held.
  db.exec("UPDATE readpast.jobs SET state = 'available', unique_key = 'k2' WHERE id = " + id);
  EXPECT_EQ(table_of(db, second), "live");
  EXPECT_EQ(key_holder(db, "k"), "");
  EXPECT_EQ(key_holder(db, "k2"), id);
  // And back, then cancelled by hand, then deleted.
  db.exec("UPDATE readpast.jobs SET state = 'waiting', priority = 7 WHERE id = " + id);
  EXPECT_EQ(table_of(db, second), "waiting");
  EXPECT_EQ(db.scalar("SELECT priority FROM readpast.waiting WHERE id = " + id), "7");
  EXPECT_EQ(key_holder(db, "k2"), id);
  // A running job moved to waiting keeps its key too.
  db.exec("UPDATE readpast.jobs SET state = 'available' WHERE id = " + id);
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5}));
  ASSERT_EQ(leased.size(), 2u);
  EXPECT_EQ(must(queue.get(second)).state, JobState::kRunning);
  db.exec("UPDATE readpast.jobs SET state = 'waiting' WHERE id = " + id);
  EXPECT_EQ(table_of(db, second), "waiting");
  EXPECT_EQ(key_holder(db, "k2"), id) << "a running job moved to waiting lost its key";
  must(queue.cancel(std::vector<JobId>{second}));
  EXPECT_EQ(table_of(db, second), "done");
  EXPECT_EQ(key_holder(db, "k2"), "");
  db.exec("INSERT INTO readpast.jobs (queue, state, unique_key) VALUES ('q', 'waiting', 'k3')");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.waiting WHERE unique_key = 'k3'"), "1");
  EXPECT_NE(key_holder(db, "k3"), "");
  db.exec("DELETE FROM readpast.jobs WHERE unique_key = 'k3'");
  EXPECT_EQ(key_holder(db, "k3"), "");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs WHERE state = 'waiting'"), "0");
}

// A due job edited to waiting with a later run_at moves to waiting alone: the edit's update in
// place, before the move, once wrote the later run_at into live, whose trigger then moved the
// job to scheduled too, and the view showed it twice (migration 21).
TEST_F(WaitingJobsTest, AnEditToWaitingWithALaterRunAtMovesTheJobOnce) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId id = must(queue.enqueue(job("q"))).id;
  const std::string n = std::to_string(id);
  ASSERT_EQ(table_of(db, id), "live");
  db.exec(
      "UPDATE readpast.jobs SET state = 'waiting', run_at = now() + interval '1 hour' "
      "WHERE id = " +
      n);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs WHERE id = " + n), "1");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.scheduled WHERE id = " + n), "0");
  EXPECT_EQ(table_of(db, id), "waiting");
  EXPECT_EQ(db.scalar("SELECT run_at > now() + interval '59 minutes' FROM readpast.waiting "
                      "WHERE id = " +
                      n),
            "t");
  // Back to available, still later: to scheduled, once.
  db.exec("UPDATE readpast.jobs SET state = 'available' WHERE id = " + n);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs WHERE id = " + n), "1");
  EXPECT_EQ(table_of(db, id), "scheduled");
}

// The lock of a dependent's dependencies probes the primary keys whatever the statistics
// say: planned while waiting was analysed empty, it does not read the whole table once the
// table has grown.
TEST_F(WaitingJobsTest, TheLockOfDependenciesProbesByIdWhateverTheStatisticsSay) {
  SqlConnection db = sql();
  db.exec("ANALYZE readpast.waiting");
  for (int i = 0; i < 8; ++i) db.exec("SELECT * FROM readpast.lock_dependencies('{1}')");
  db.exec(
      "INSERT INTO readpast.waiting (id, queue, waiting_for) "
      "SELECT nextval('readpast.jobs_id_seq'), 'q', 1 FROM generate_series(1, 5000)");
  db.exec("BEGIN");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lock_dependencies('{2500}')"), "1");
  EXPECT_EQ(db.scalar("SELECT seq_scan FROM pg_stat_xact_user_tables "
                      "WHERE relid = 'readpast.waiting'::regclass"),
            "0");
  db.exec("COMMIT");
}

// A cancel that waits for a waiting job's row while another transaction moves the job to live
// (as the resolver does when its last dependency succeeds) still cancels it.
TEST_F(WaitingJobsTest, ACancelRacingTheMoveToLiveStillCancels) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId first = must(queue.enqueue(job("q"))).id;
  const JobId second = dependent_of(queue, first);

  SqlConnection mover = sql();
  mover.exec("BEGIN");
  mover.exec("UPDATE readpast.jobs SET state = 'available' WHERE id = " + std::to_string(second));
  auto cancelled =
      std::async(std::launch::async, [&] { return queue.cancel(std::vector<JobId>{second}); });
  until_a_session_waits_for_a_lock(db);
  mover.exec("COMMIT");
  const auto result = must(cancelled.get());
  EXPECT_EQ(result, std::vector<JobId>{second});
  EXPECT_EQ(must(queue.get(second)).state, JobState::kCancelled);
  EXPECT_TRUE(must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5})).size() == 1u);
}

// The enqueue of a dependent that waits for a waiting job's row while another transaction
// moves that job to live marks it in live: when it finishes, the new dependent is told.
TEST_F(WaitingJobsTest, ADependencyMovedToLiveWhileLockedForADependentStillTellsIt) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId first = must(queue.enqueue(job("q"))).id;
  const JobId second = dependent_of(queue, first);

  SqlConnection mover = sql();
  mover.exec("BEGIN");
  mover.exec("UPDATE readpast.jobs SET state = 'available', notify = false WHERE id = " +
             std::to_string(second));
  NewJob last = job("q", "last");
  last.after = {second};
  auto enqueued = std::async(std::launch::async, [&] { return queue.enqueue(last); });
  until_a_session_waits_for_a_lock(db);
  mover.exec("COMMIT");
  const JobId third = must(enqueued.get()).id;
  EXPECT_EQ(db.scalar("SELECT notify FROM readpast.live WHERE id = " + std::to_string(second)),
            "t");
  EXPECT_EQ(must(queue.get(third)).state, JobState::kWaiting);

  for (int round = 0; round < 2; ++round) {
    auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5}));
    for (const Job& j : leased) must(queue.complete(j.id, *j.lease_token));
  }
  must(queue.resolve_dependencies());
  EXPECT_EQ(must(queue.get(third)).state, JobState::kAvailable) << "the dependent was never told";
}

}  // namespace
}  // namespace readpast::test
