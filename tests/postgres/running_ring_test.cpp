// Running jobs in a ring of three segments (migration 23, docs/postgres-storage.md sections 4
// and 8): a rotation moves the jobs still running in the oldest segment to the current one and
// truncates it; it never waits behind a long transaction; a settle that waited for a rotation
// finds its job where the rotation put it; and leases take turns at rotating by themselves.
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "moving_jobs.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

using RunningRingTest = MovingJobsTest;

std::string segment_of(SqlConnection& db, JobId id) {
  return db.scalar("SELECT coalesce((SELECT seg::text FROM readpast.running WHERE id = $1), '')",
                   {std::to_string(id)});
}

std::string current_segment(SqlConnection& db) {
  return db.scalar("SELECT (pg_sequence_last_value('readpast.running_cur') % 3)::text");
}

// The tests below rotate by hand. A Queue's leases take a turn a second after it opened at the
// earliest (the last test), and the first of them in a database rotates: each test leases
// within that second, or expects what such a turn does.
TEST_F(RunningRingTest, ARotationTruncatesSettledJobsAndMovesTheRunningOnes) {
  Queue queue = open();
  SqlConnection db = sql();
  for (int i = 0; i < 3; ++i) must(queue.enqueue(job("q")));
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 3}));
  ASSERT_EQ(leased.size(), 3u);
  const std::string first = segment_of(db, leased[0].id);
  ASSERT_EQ(first, current_segment(db));
  must(queue.complete(leased[0].id, *leased[0].lease_token));
  must(queue.complete(leased[1].id, *leased[1].lease_token));

  // Two rotations empty the two other segments; the third comes back to the leases' segment.
  for (int i = 0; i < 2; ++i) {
    const StorageRotation r = must(queue.rotate_storage());
    EXPECT_TRUE(r.rotated);
    EXPECT_EQ(r.moved, 0);
  }
  EXPECT_EQ(segment_of(db, leased[2].id), first);
  const std::string before = current_segment(db);
  const StorageRotation r = must(queue.rotate_storage());
  EXPECT_TRUE(r.rotated);
  EXPECT_EQ(r.moved, 1) << "the job still running was not moved";
  EXPECT_EQ(segment_of(db, leased[2].id), before) << "moved elsewhere than the current segment";
  EXPECT_EQ(current_segment(db), first);
  EXPECT_EQ(db.scalar("SELECT pg_relation_size('readpast.running_" + first + "')"), "0")
      << "the emptied segment was not truncated";

  // The moved job keeps its lease: its state, its token, its settle.
  const Job moved = must(queue.get(leased[2].id));
  EXPECT_EQ(moved.state, JobState::kRunning);
  EXPECT_EQ(moved.lease_token, leased[2].lease_token);
  must(queue.extend(leased[2].id, *leased[2].lease_token, 1min));
  must(queue.complete(leased[2].id, *leased[2].lease_token));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.running"), "0");
}

// While a rotation waits for its lock, every lease and settle that wants the segment waits
// behind it: so it gives up after 50 ms on a lock held by a short transaction, and at once on
// one held by a transaction that has been open for over a second (a long reader), and leases
// and settles go on meanwhile.
TEST_F(RunningRingTest, ARotationGivesUpOnALockedSegmentAndHoldsNobodyUp) {
  Queue queue = open();
  SqlConnection db = sql();
  const std::string next =
      db.scalar("SELECT ((pg_sequence_last_value('readpast.running_cur') + 1) % 3)::text");
  SqlConnection reader = sql();
  reader.exec("BEGIN");
  reader.exec("SELECT count(*) FROM readpast.running_" + next);

  reader.exec("SET application_name = 'ring-reader'");
  const std::string pid = reader.scalar("SELECT pg_backend_pid()::text");

  auto started = std::chrono::steady_clock::now();
  const StorageRotation short_wait = must(queue.rotate_storage());
  EXPECT_FALSE(short_wait.rotated) << "rotated under another session's lock";
  EXPECT_FALSE(short_wait.blocked_by) << "a transaction younger than a second named";
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);

  std::this_thread::sleep_for(1100ms);
  started = std::chrono::steady_clock::now();
  const StorageRotation blocked = must(queue.rotate_storage());
  EXPECT_FALSE(blocked.rotated);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 45ms)
      << "waited for a long transaction's lock";
  // And it says who: the session, its name, its state, how long its transaction has run.
  ASSERT_TRUE(blocked.blocked_by);
  EXPECT_EQ(blocked.blocked_by->kind, "session");
  ASSERT_TRUE(blocked.blocked_by->pid);
  EXPECT_EQ(std::to_string(*blocked.blocked_by->pid), pid);
  EXPECT_EQ(blocked.blocked_by->client, "ring-reader");
  EXPECT_EQ(blocked.blocked_by->state, "idle in transaction");
  ASSERT_TRUE(blocked.blocked_by->age);
  EXPECT_GE(*blocked.blocked_by->age, 1s);

  must(queue.enqueue(job("q")));
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.complete(leased[0].id, *leased[0].lease_token));

  reader.exec("COMMIT");
  EXPECT_TRUE(must(queue.rotate_storage()).rotated);
  EXPECT_EQ(current_segment(db), next);
}

// A lease's turn that finds the segment held by a transaction older than a rotation interval
// warns, naming the session (event rotation_blocked): the ring stops turning until it ends.
TEST_F(RunningRingTest, ALeasesTurnBlockedByALongTransactionWarnsNamingIt) {
  SqlConnection db = sql();
  open();  // the schema
  const std::string next =
      db.scalar("SELECT ((pg_sequence_last_value('readpast.running_cur') + 1) % 3)::text");
  SqlConnection reader = sql();
  reader.exec("SET application_name = 'ring-reader'");
  const std::string pid = reader.scalar("SELECT pg_backend_pid()::text");
  reader.exec("BEGIN");
  reader.exec("SELECT count(*) FROM readpast.running_" + next);
  std::this_thread::sleep_for(Queue::kRotationInterval + 500ms);

  std::mutex mu;
  std::vector<LogRecord> warnings;
  QueueOptions options;
  options.logger = [&](const LogRecord& record) {
    std::lock_guard lock(mu);
    for (const auto& [name, value] : record.fields) {
      if (name == "event" && value == "rotation_blocked") warnings.push_back(record);
    }
  };
  Queue queue = open(options);
  must(queue.enqueue(job("q")));
  std::this_thread::sleep_for(1100ms);  // a Queue's first turn comes a second after it opened
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  reader.exec("COMMIT");
  std::lock_guard lock(mu);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].level, LogLevel::kWarn);
  EXPECT_NE(warnings[0].message.find("session " + pid + " (ring-reader, idle in transaction)"),
            std::string::npos)
      << warnings[0].message;
}

// A settle that waits for the segment a rotation empties takes its snapshot after the wait
// (PostgreSQL locks a statement's tables before it takes its snapshot), and so finds its job
// in the segment the rotation moved it to, rather than reporting its lease lost.
TEST_F(RunningRingTest, ASettleThatWaitedForARotationFindsItsJobMoved) {
  Queue queue = open();
  SqlConnection db = sql();
  must(queue.enqueue(job("q")));
  must(queue.enqueue(job("q")));
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 2}));
  ASSERT_EQ(leased.size(), 2u);
  const std::string first = segment_of(db, leased[0].id);
  must(queue.rotate_storage());
  must(queue.rotate_storage());
  ASSERT_EQ(segment_of(db, leased[0].id), first);

  SqlConnection rotation = sql();
  rotation.exec("BEGIN");
  ASSERT_EQ(rotation.scalar("SELECT moved FROM readpast.rotate_running()"), "2");
  auto completed = std::async(std::launch::async,
                              [&] { return queue.complete(leased[0].id, *leased[0].lease_token); });
  auto failed = std::async(std::launch::async, [&] {
    FailOptions at_once;
    at_once.retry_after = Duration::zero();
    return queue.fail(leased[1].id, *leased[1].lease_token, "boom", at_once);
  });
  until_a_session_waits_for_a_lock(db);
  std::this_thread::sleep_for(100ms);  // both settles queue for the segment's lock
  rotation.exec("COMMIT");
  const Status complete = completed.get();
  EXPECT_TRUE(complete) << "the complete lost a lease the rotation only moved: "
                        << complete.error().message;
  const Result<FailOutcome> fail = failed.get();
  ASSERT_TRUE(fail) << fail.error().message;
  EXPECT_EQ(*fail, FailOutcome::kRetrying);
  EXPECT_EQ(must(queue.get(leased[0].id)).state, JobState::kSucceeded);
  EXPECT_EQ(table_of(db, leased[1].id), "live");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.running"), "0");
}

// A rotation is one transaction, but the sequence it advances is not transactional: one that
// dies before it commits (rolled back here, as a crash would) leaves its segment's jobs where
// they were and the next segment current without having truncated it. Nothing is lost: every
// job still settles, and the next rotations empty the segments as usual.
TEST_F(RunningRingTest, ARotationThatDiesLosesNoJob) {
  Queue queue = open();
  SqlConnection db = sql();
  for (int i = 0; i < 4; ++i) must(queue.enqueue(job("q")));
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 4}));
  ASSERT_EQ(leased.size(), 4u);
  must(queue.rotate_storage());
  must(queue.rotate_storage());
  SqlConnection rotation = sql();
  rotation.exec("BEGIN");
  ASSERT_EQ(rotation.scalar("SELECT moved FROM readpast.rotate_running()"), "4");
  rotation.exec("ROLLBACK");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.running"), "4");
  must(queue.complete(leased[0].id, *leased[0].lease_token));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(must(queue.rotate_storage()).rotated);
  for (std::size_t i = 1; i < leased.size(); ++i) {
    must(queue.complete(leased[i].id, *leased[i].lease_token));
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.running"), "0");
  for (const auto& l : leased) EXPECT_EQ(must(queue.get(l.id)).state, JobState::kSucceeded);
}

// Leases rotate by themselves: of every process, one per Queue::kRotationInterval claims the
// turn ("ring" in readpast.tasks) and rotates, and the others' leases leave it alone. Not the
// first lease of a Queue just opened: a turn would delay its first job.
TEST_F(RunningRingTest, LeasesTakeTurnsAtRotating) {
  Queue one = open();
  Queue other = open();
  SqlConnection db = sql();
  const std::string start = db.scalar("SELECT pg_sequence_last_value('readpast.running_cur')");
  must(one.enqueue(job("q")));
  ASSERT_EQ(must(one.lease({.queue = "q", .worker_id = "one"})).size(), 1u);
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.tasks WHERE task = 'ring'"), "0")
      << "a Queue's first lease took a turn";
  std::this_thread::sleep_for(1100ms);
  must(one.enqueue(job("q")));
  ASSERT_EQ(must(one.lease({.queue = "q", .worker_id = "one"})).size(), 1u);
  EXPECT_EQ(db.scalar("SELECT pg_sequence_last_value('readpast.running_cur') - " + start), "1");
  EXPECT_EQ(db.scalar("SELECT claimed_by FROM readpast.tasks WHERE task = 'ring'"), "one");
  must(other.enqueue(job("q")));
  ASSERT_EQ(must(other.lease({.queue = "q", .worker_id = "other"})).size(), 1u);
  EXPECT_EQ(db.scalar("SELECT pg_sequence_last_value('readpast.running_cur') - " + start), "1")
      << "a second rotation within the interval";
}

}  // namespace
}  // namespace readpast::test
