// first_run_at() (migration 16): the earliest run_at of a queue's available jobs, read lane by
// lane from jobs_lease_idx now that jobs_due_idx is gone. The leases' guard and next_due stand
// on it: an answer too late would let a worker sleep past a due job, one too early would make
// it spin. Checked against the plain min() over the table for many random queues, and for
// reading no more than a descent per lane where a held snapshot keeps dead entries.
#include <random>

#include "pg_test_util.hpp"

namespace readpast::test {
namespace {

class FirstRunAtTest : public PostgresTest {};

// What first_run_at(queue, after) must say, by brute force: the earliest run_at among the
// queue's available jobs, counting in the registered lanes only those at or after `after`
// (the engine's frontiers start there), and every job of a lane nobody registered.
std::string expected_first(SqlConnection& db, const Value& after) {
  return db.scalar(
      "SELECT min(j.run_at) FROM readpast.live j WHERE j.queue = 'q' AND j.state = 'available' "
      "AND (j.run_at >= coalesce($1::timestamptz, '-infinity') OR NOT EXISTS ("
      "  SELECT 1 FROM readpast.lanes l WHERE l.queue = 'q' AND l.priority = j.priority))",
      {after});
}

TEST_F(FirstRunAtTest, AgreesWithMinOverTheTableForRandomLanesAndFrontiers) {
  open();
  SqlConnection db = sql();
  std::mt19937 random(20261129);
  const std::vector<int> priorities = {-2147483648, -3, 0, 2, 5, 9, 2147483647};
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(random); };
  for (int round = 0; round < 150; ++round) {
    db.exec("DELETE FROM readpast.live");
    db.exec("DELETE FROM readpast.lanes");
    const int jobs = pick(9);
    for (int i = 0; i < jobs; ++i) {
      // Another queue's jobs around it, which no answer may count.
      const std::string queue = pick(4) == 0 ? "r" : "q";
      db.query(
          "INSERT INTO readpast.jobs (queue, payload, priority, run_at) VALUES ($1, 'x', $2, "
          "statement_timestamp() + $3 * interval '1 second')",
          {queue, std::to_string(priorities[pick(7)]), std::to_string(pick(121) - 60)});
    }
    // Some lanes registered (and some of them empty), the rest left for the gaps.
    for (int p : priorities) {
      if (pick(2) == 0) {
        db.query("INSERT INTO readpast.lanes (queue, priority) VALUES ($1, $2)",
                 {pick(5) == 0 ? "r" : "q", std::to_string(p)});
      }
    }
    // A taken job is not available: lease one now and then.
    if (jobs > 0 && pick(3) == 0) {
      db.exec("SELECT count(*) FROM readpast.lease('q', 'w', 1)");
    }
    const std::string after_s = std::to_string(pick(121) - 60);
    const Value after = pick(3) == 0 ? Value{}
                                     : Value{db.scalar("SELECT statement_timestamp() + $1 * "
                                                       "interval '1 second'",
                                                       {after_s})};
    const std::string expected = expected_first(db, after);
    const std::string got =
        db.scalar("SELECT readpast.first_run_at('q', $1::timestamptz)", {after});
    ASSERT_EQ(got, expected) << "round " << round << ", after " << after.value_or("NULL");
  }
}

TEST_F(FirstRunAtTest, AQueueWhoseOnlyDueJobIsInALaterLaneIsLeasedAndWaitsForNothing) {
  Queue queue = open();
  SqlConnection db = sql();
  NewJob later = job("q", "later");
  later.priority = 0;
  later.delay = std::chrono::hours(1);
  must(queue.enqueue(later));
  NewJob due = job("q", "due");
  due.priority = 7;
  const JobId due_id = must(queue.enqueue(due)).id;
  // The guard before the walk sees the due job of lane 7 past lane 0's scheduled one.
  EXPECT_TRUE(must(queue.wait_for_work("q", 0ms)));
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, due_id);
  // Only the scheduled job is left, in scheduled since schema 18: nothing to take, nothing in
  // live, and the job due in an hour.
  EXPECT_TRUE(must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5})).empty());
  EXPECT_EQ(db.scalar("SELECT readpast.first_run_at('q', NULL)"), "");
  const std::string in_s = db.scalar(
      "SELECT extract(epoch FROM run_at - statement_timestamp()) FROM readpast.scheduled");
  EXPECT_GT(std::stod(in_s), 3500.0);
  EXPECT_LT(std::stod(in_s), 3601.0);
}

// The leases' guard reads the queue's first entry first and asks first_run_at() only when that
// entry is scheduled for later: a call on every lease cost one-job leases 13% (run 47). Since
// schema 18 a job scheduled for later waits in scheduled, so the first entry of live is due
// whenever there is one and the guard never asks.
TEST_F(FirstRunAtTest, TheLeaseNeverAsksEveryLaneNowThatScheduledJobsAreElsewhere) {
  Queue queue = open();
  SqlConnection db = sql();
  // The calls a lease made: the backend's count of the function's calls before and after, in
  // one transaction (counts of earlier transactions stay pending in it for up to a second).
  auto calls_of_a_lease = [&] {
    const std::string count =
        "SELECT coalesce(pg_stat_get_xact_function_calls("
        "'readpast.first_run_at(text, timestamptz)'::regprocedure), 0)";
    db.exec("BEGIN");
    db.exec("SET LOCAL track_functions = 'pl'");
    const long before = std::stol(db.scalar(count));
    db.exec("SELECT count(*) FROM readpast.lease_head_walk('q', 'w', 30000000, '{}', 1)");
    const long calls = std::stol(db.scalar(count)) - before;
    db.exec("ROLLBACK");
    return calls;
  };
  NewJob later = job("q");
  later.priority = 0;
  later.delay = std::chrono::hours(1);
  must(queue.enqueue(later));
  EXPECT_EQ(calls_of_a_lease(), 0) << "a job scheduled for later was in live";
  NewJob due = job("q");
  due.priority = -1;
  must(queue.enqueue(due));
  EXPECT_EQ(calls_of_a_lease(), 0) << "a due first job answers alone";
}

// Under a held snapshot the entries of jobs taken since stay at the head of their lane: from
// the engine's frontier, a registered lane is read from there, not walked from its head.
TEST_F(FirstRunAtTest, FromAFrontierALaneIsNotWalkedFromItsHead) {
  Queue queue = open();
  SqlConnection holder = sql();
  holder.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
  holder.exec("SELECT count(*) FROM readpast.queues");
  std::vector<NewJob> batch(20000, job("q"));
  must(queue.enqueue_batch(batch));
  complete_in_leases_of_1000(queue, "q", 20000);
  SqlConnection db = sql();
  db.exec("INSERT INTO readpast.lanes (queue, priority) VALUES ('q', 0) ON CONFLICT DO NOTHING");
  const std::string frontier = db.scalar("SELECT statement_timestamp()");
  must(queue.enqueue(job("q")));
  auto pages_read = [&](const Value& after) {
    db.exec("BEGIN");
    const std::string before =
        db.scalar("SELECT pg_stat_get_xact_blocks_fetched('readpast.jobs_lease_idx'::regclass)");
    const std::string first =
        db.scalar("SELECT readpast.first_run_at('q', $1::timestamptz)", {after});
    EXPECT_FALSE(first.empty());
    const std::string pages = db.scalar(
        "SELECT pg_stat_get_xact_blocks_fetched('readpast.jobs_lease_idx'::regclass) - " + before);
    db.exec("COMMIT");
    return std::stol(pages);
  };
  const long from_head = pages_read(Value{});
  const long from_frontier = pages_read(frontier);
  // 20,000 dead entries fill some 80 pages of the index; the descents of a lane and the gaps
  // around it read two or three each.
  EXPECT_GT(from_head, 50) << "the head's dead entries were not there to walk";
  EXPECT_LT(from_frontier, 20) << "the lane was walked from its head";
  holder.exec("ROLLBACK");
}

}  // namespace
}  // namespace readpast::test
