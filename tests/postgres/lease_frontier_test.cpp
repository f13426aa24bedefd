// The lease's frontiers (src/engines/postgres/lease_frontier.hpp, migration 11): a lease starts
// each lane where earlier leases of the process proved that nothing is left, and yet hands out
// every job that appears behind that point: one committed late (the outbox), one dated in the
// past, one of a statement that ran long, one of a new lane, one nobody registered. Then what
// it is for: under a snapshot another session holds, a lease does not walk what was leased
// before. And the frontier's own bookkeeping, without a database.
#include "engines/postgres/lease_frontier.hpp"

#include <future>
#include <set>

#include "pg_test_util.hpp"

namespace readpast::test {
namespace {

// Every lease lane by lane from the frontiers (URL parameter lease_lanes=always), as the
// engine leases while another session holds an old snapshot (lease_mode.hpp).
class LeaseFrontierTest : public PostgresTest {
 protected:
  Queue open() { return open_with("lease_lanes=always"); }
};
using detail::pg::LaneKey;
using detail::pg::LeaseFrontier;
using detail::pg::LeasePlan;
using detail::pg::LeaseReport;

// Leases and completes every job of the queue, `max_jobs` at a time; the ids, in the order
// they were handed out.
std::vector<JobId> drain(Queue& queue, const std::string& name, int max_jobs = 10) {
  std::vector<JobId> ids;
  while (true) {
    auto leased = must(queue.lease({.queue = name, .worker_id = "w", .max_jobs = max_jobs}));
    if (leased.empty()) return ids;
    std::vector<LeasedRef> refs;
    for (const Job& j : leased) {
      ids.push_back(j.id);
      refs.push_back(LeasedRef{j.id, *j.lease_token});
    }
    must(queue.complete_batch(refs));
  }
}

// Enqueues `n` jobs and drains them, in rounds more than δ apart, so that the process' frontier
// stands past all of them.
void advance_the_frontier(Queue& queue, const std::string& name, int rounds = 3) {
  for (int round = 0; round < rounds; ++round) {
    std::vector<NewJob> jobs(5, job(name));
    must(queue.enqueue_batch(jobs));
    std::this_thread::sleep_for(LeaseFrontier::kDelta * 2);
    ASSERT_EQ(drain(queue, name).size(), 5u);
  }
}

TEST_F(LeaseFrontierTest, AJobCommittedAfterLaterOnesWereLeasedIsHandedOutNext) {
  Queue queue = open();
  advance_the_frontier(queue, "q");
  // The outbox: an application's transaction enqueues, and commits only after other jobs,
  // enqueued later, have been leased past its job's place.
  SqlConnection app = sql();
  app.exec("BEGIN");
  const std::string late = app.scalar("SELECT readpast.enqueue('q', 'late'::bytea)");
  std::this_thread::sleep_for(LeaseFrontier::kDelta * 2);
  for (int round = 0; round < 3; ++round) {
    must(queue.enqueue(job("q")));
    std::this_thread::sleep_for(LeaseFrontier::kDelta * 2);
    ASSERT_EQ(drain(queue, "q").size(), 1u);
  }
  app.exec("COMMIT");
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u) << "the late commit was passed over";
  EXPECT_EQ(std::to_string(leased[0].id), late);
}

TEST_F(LeaseFrontierTest, AJobDatedBeforeTheFrontierIsHandedOutByTheNextLease) {
  Queue queue = open();
  advance_the_frontier(queue, "q");
  NewJob old = job("q", "old");
  old.run_at = must(queue.now()) - std::chrono::hours(1);
  const JobId id = must(queue.enqueue(old)).id;
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u) << "the job dated in the past was passed over";
  EXPECT_EQ(leased[0].id, id);
  // It was announced: a mark names its key.
  SqlConnection db = sql();
  EXPECT_EQ(
      db.scalar("SELECT count(*) FROM readpast.lane_marks WHERE id = $1", {std::to_string(id)}),
      "1");
}

TEST_F(LeaseFrontierTest, MarksAnHourOldAreDeletedByTheNextOneWritten) {
  Queue queue = open();
  SqlConnection db = sql();
  db.exec(
      "INSERT INTO readpast.lane_marks (queue, priority, run_at, id, marked_at) "
      "VALUES ('q', 0, now(), 1, now() - interval '61 minutes'), "
      "('q', 0, now(), 2, now() - interval '59 minutes')");
  must(queue.enqueue(job("q")));  // dated now: no mark, nothing deleted
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.lane_marks"),
            "1 2");
  NewJob old = job("q", "old");
  old.run_at = must(queue.now()) - std::chrono::hours(1);
  const JobId id = must(queue.enqueue(old)).id;
  EXPECT_EQ(db.scalar("SELECT string_agg(id::text, ' ' ORDER BY id) FROM readpast.lane_marks"),
            "2 " + std::to_string(id));
}

// δ in seconds, times `factor`, as a parameter of pg_sleep or of an interval.
std::string delta_seconds(double factor) {
  return std::to_string(std::chrono::duration<double>(LeaseFrontier::kDelta).count() * factor);
}

// The SQL's δ is the engine's (migration 22): a statement that ran twice as long marks its job.
// Were it larger in SQL, the job would be unmarked below a frontier the engine draws.
TEST_F(LeaseFrontierTest, AStatementThatRanLongerThanDeltaMarksItsJobs) {
  Queue queue = open();
  SqlConnection db = sql();
  const std::string id = db.scalar(
      "INSERT INTO readpast.jobs (queue, payload) SELECT 'q', 'slow'::bytea "
      "FROM pg_sleep($1::float8) RETURNING id",
      {delta_seconds(2)});
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lane_marks WHERE id = $1", {id}), "1");
}

// A job dated 0.9 δ before its statement started (an explicit run_at, such as now() in a
// transaction that began earlier), by a statement that ran 0.3 δ: older than δ when the trigger
// runs, so marked. Migration 18 marked by the statement's start and length, neither of which
// passed δ, and left it up to 2 δ below a lease's time unmarked.
TEST_F(LeaseFrontierTest, AJobDatedMoreThanDeltaBeforeItsTriggerRanIsMarked) {
  Queue queue = open();
  SqlConnection db = sql();
  const std::string id = db.scalar(
      "INSERT INTO readpast.jobs (queue, payload, run_at) SELECT 'q', 'early'::bytea, "
      "statement_timestamp() - $1::float8 * interval '1 second' FROM pg_sleep($2::float8) "
      "RETURNING id",
      {delta_seconds(0.9), delta_seconds(0.3)});
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lane_marks WHERE id = $1", {id}), "1");
}

// The same rule for a job an update re-dates (live_announce_updated): a hand edit of an
// available job's run_at, 0.9 δ before its statement, in a statement that ran 0.3 δ. (Running
// jobs are in running since migration 23; a hand release is an insert into live, the case above.)
TEST_F(LeaseFrontierTest, AJobRedatedByHandWithARunAtMoreThanDeltaOldIsMarked) {
  Queue queue = open();
  const JobId id = must(queue.enqueue(job("q"))).id;
  SqlConnection db = sql();
  db.exec("DELETE FROM readpast.lane_marks");
  ASSERT_EQ(db.scalar("UPDATE readpast.live "
                      "SET run_at = statement_timestamp() - $1::float8 * interval '1 second' "
                      "FROM pg_sleep($2::float8) WHERE id = $3 RETURNING id",
                      {delta_seconds(0.9), delta_seconds(0.3), std::to_string(id)}),
            std::to_string(id));
  EXPECT_EQ(
      db.scalar("SELECT count(*) FROM readpast.lane_marks WHERE id = $1", {std::to_string(id)}),
      "1");
}

TEST_F(LeaseFrontierTest, AJobMadeAvailableAgainWithAnOldRunAtIsHandedOutByTheNextLease) {
  Queue queue = open();
  NewJob later = job("q", "later");
  later.delay = std::chrono::hours(1);
  const JobId id = must(queue.enqueue(later)).id;
  advance_the_frontier(queue, "q");
  // A hand edit through the view moves the scheduled job to a time the frontier has passed.
  SqlConnection db = sql();
  db.exec(
      "UPDATE readpast.jobs SET run_at = statement_timestamp() - interval '1 hour' "
      "WHERE id = " +
      std::to_string(id));
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u) << "the job moved back in time was passed over";
  EXPECT_EQ(leased[0].id, id);
}

TEST_F(LeaseFrontierTest, AJobOfAStatementThatRanLongIsHandedOutOnceItCommits) {
  Queue queue = open();
  advance_the_frontier(queue, "q");
  // The insert is dated when its statement starts, and writes two seconds later; meanwhile
  // leases of other jobs move the frontier past its date (and stop well before it commits).
  auto slow = std::async(std::launch::async, [this] {
    SqlConnection db = sql();
    return db.scalar(
        "INSERT INTO readpast.jobs (queue, payload) SELECT 'q', 'slow'::bytea "
        "FROM pg_sleep(2) RETURNING id");
  });
  const auto started = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - started < 1200ms) {
    must(queue.enqueue(job("q")));
    std::this_thread::sleep_for(LeaseFrontier::kDelta * 2);
    drain(queue, "q");
  }
  const std::string id = slow.get();
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u) << "the slow statement's job was passed over";
  EXPECT_EQ(std::to_string(leased[0].id), id);
}

TEST_F(LeaseFrontierTest, AJobOfANewHigherPriorityIsHandedOutFirst) {
  Queue queue = open();
  advance_the_frontier(queue, "q");
  std::vector<NewJob> jobs(3, job("q"));
  must(queue.enqueue_batch(jobs));
  NewJob urgent = job("q", "urgent");
  urgent.priority = 0;  // a lane the queue has not used
  const JobId id = must(queue.enqueue(urgent)).id;
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, id);
  EXPECT_EQ(drain(queue, "q").size(), 3u);
}

// Enqueues do not register lanes (schema 12: the insert trigger would pay a probe on every
// statement); a lease lane by lane finds every lane nobody registered, in the gaps between
// those registered, hands out its jobs in priority order with the others', and registers it.
TEST_F(LeaseFrontierTest, ALeaseFindsTheLanesNoEnqueueRegisteredAndTakesThemInPriorityOrder) {
  Queue queue = open();
  NewJob five = job("q");
  five.priority = 5;
  must(queue.enqueue(five));
  ASSERT_EQ(drain(queue, "q").size(), 1u);  // lane 5 is registered by the lease from the head
  SqlConnection db = sql();
  ASSERT_EQ(db.scalar("SELECT string_agg(priority::text, ' ') FROM readpast.lanes"), "5");
  std::vector<NewJob> jobs;
  for (const int priority : {9, 2, 5, 1, 7, 2}) {
    NewJob j = job("q", std::to_string(priority));
    j.priority = priority;
    jobs.push_back(j);
  }
  must(queue.enqueue_batch(jobs));
  EXPECT_EQ(db.scalar("SELECT string_agg(priority::text, ' ') FROM readpast.lanes"), "5")
      << "the enqueue registered lanes";
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 10}));
  std::vector<int> priorities;
  for (const Job& j : leased) priorities.push_back(j.priority);
  EXPECT_EQ(priorities, (std::vector<int>{1, 2, 2, 5, 7, 9}));
  EXPECT_EQ(db.scalar("SELECT string_agg(priority::text, ' ' ORDER BY priority) "
                      "FROM readpast.lanes"),
            "1 2 5 7 9");
}

TEST_F(LeaseFrontierTest, UnderAHeldSnapshotALeaseReadsOnlyWhatWasLeasedSinceTheLastOne) {
  {
    Queue producer = open();
    std::vector<NewJob> jobs(3000, job("q"));
    must(producer.enqueue_batch(jobs));
  }
  std::this_thread::sleep_for(LeaseFrontier::kDelta * 2);
  // Another session holds a snapshot: nothing that the leases and completions below leave
  // behind may be removed, nor its index entries marked dead.
  SqlConnection holder = sql();
  holder.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
  holder.exec("SELECT count(*) FROM pg_class");
  const std::string holder_pid = holder.scalar("SELECT pg_backend_pid()");
  SqlConnection db = sql();
  // Entries of jobs_lease_idx returned to scans, as counted once every other session of the
  // database has ended (a backend reports its counts when it exits, or after idling a while).
  auto entries_read = [&] {
    EXPECT_TRUE(eventually(
        [&] {
          return db.scalar(
                     "SELECT count(*) FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                     "AND pid <> $1",
                     {holder_pid}) == "0";
        },
        10s));
    db.exec("SELECT pg_stat_clear_snapshot()");
    return std::stoll(db.scalar(
        "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'jobs_lease_idx'"));
  };
  const long long before = entries_read();
  {
    Queue queue = open();
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < 26; ++i) {  // 2,600 jobs leased and deleted, none removable
      auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 100}));
      ASSERT_EQ(leased.size(), 100u);
      std::vector<LeasedRef> refs;
      for (const Job& j : leased) refs.push_back(LeasedRef{j.id, *j.lease_token});
      must(queue.complete_batch(refs));
    }
    // One head scan (the first lease) and the rest from frontiers.
    ASSERT_LT(std::chrono::steady_clock::now() - started, LeaseFrontier::kHeadScanFirst);
  }
  const long long read = entries_read() - before;
  // Each lease from the head reads the entries every earlier one left: 100 + 200 + … + 2,600
  // = 35,100 in all. From frontiers, each reads about the 100 it takes.
  EXPECT_LT(read, 8000) << "the leases walked what earlier leases had taken";
  EXPECT_GE(read, 2600);
  holder.exec("COMMIT");
}

TEST_F(LeaseFrontierTest, AJobInALaneNobodyRegisteredWithTriggersOffIsHandedOutByTheNextLease) {
  Queue queue = open();
  // Priority 7 has never been used, and the row is written with triggers off: nothing marks
  // or announces it. The lease finds its lane between the registered ones (lane 100, the
  // default) and registers it.
  must(queue.enqueue(job("q")));
  ASSERT_EQ(must(queue.lease({.queue = "q", .worker_id = "w"})).size(), 1u);
  SqlConnection producer = sql();
  producer.exec("SET session_replication_role = replica");
  producer.exec("INSERT INTO readpast.live (queue, priority) VALUES ('q', 7)");
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].priority, 7);
  SqlConnection db = sql();
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.lanes WHERE queue = 'q' AND priority = 7"),
            "1");
}

// A job that appears behind the frontiers unannounced (as one does whose locker rolled back
// after the frontiers passed it: a lease that failed) is handed out by a look-back scan. Past
// the first two scans of the process, which read from the head, a scan behind the frontiers
// starts every lane where its frontier stood when the scan before the previous one started
// (lease_frontier.hpp), not at the head. Here the job is written with triggers off, so that
// no mark announces it, and dated a second back, behind the frontier.
TEST_F(LeaseFrontierTest, AJobThatAppearsBehindTheFrontiersUnannouncedIsHandedOutByALookBack) {
  Queue queue = open();
  const auto started = std::chrono::steady_clock::now();
  // Leases of one job at a time, each enqueued just before, as a steady queue runs: they move
  // the frontier on and make the scans come.
  auto one_round = [&] {
    must(queue.enqueue(job("q")));
    std::this_thread::sleep_for(LeaseFrontier::kDelta * 2);
    return drain(queue, "q", 1);
  };
  while (std::chrono::steady_clock::now() - started <
         LeaseFrontier::kHeadScanFirst + LeaseFrontier::kHeadScanAtMost + 1s) {
    one_round();
  }
  SqlConnection writer = sql();
  writer.exec("SET session_replication_role = replica");
  const JobId behind = std::stoll(writer.scalar(
      "INSERT INTO readpast.live (queue, run_at) VALUES ('q', now() - interval '1 second') "
      "RETURNING id"));
  const auto written = std::chrono::steady_clock::now();
  for (const JobId id : one_round()) ASSERT_NE(id, behind) << "it was not behind the frontier";
  bool handed_out = false;
  while (!handed_out &&
         std::chrono::steady_clock::now() - written < 2 * LeaseFrontier::kHeadScanAtMost + 2s) {
    for (const JobId id : one_round()) handed_out = handed_out || id == behind;
  }
  EXPECT_TRUE(handed_out) << "the job behind the frontiers was not handed out";
}

// Turns on track_functions in the database of `db`, for lease_lanes_calls.
void count_function_calls(SqlConnection& db) {
  db.exec(
      "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET track_functions = ''pl''', "
      "current_database()); END $$");
}

// Calls of lease_lanes (or `function`) in the database of `db` that the sessions have
// reported so far.
long long lease_lanes_calls_reported(SqlConnection& db,
                                     const std::string& function = "lease_lanes") {
  db.exec("SELECT pg_stat_clear_snapshot()");
  return std::stoll(
      db.scalar("SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions "
                "WHERE schemaname = 'readpast' AND funcname = '" +
                function + "'"));
}

// The same, once every session has reported them: a backend reports its counts a second or so
// after it goes idle, so the count is read until it stands still.
long long lease_lanes_calls(SqlConnection& db, const std::string& function = "lease_lanes") {
  long long last = -1;
  for (int i = 0; i < 12; ++i) {
    std::this_thread::sleep_for(1500ms);
    const long long now = lease_lanes_calls_reported(db, function);
    if (now == last) return now;
    last = now;
  }
  return last;
}

// The default, lease_lanes=auto: from the head while nothing holds vacuum back, lane by lane
// (the function lease_lanes, counted by track_functions) once another session's snapshot has
// stood for a second with a thousand transactions since, and from the head again once it ends.
TEST_F(LeaseFrontierTest, LeasesTurnToTheLanesWhileAnotherSessionHoldsAnOldSnapshotAndBackAfter) {
  SqlConnection db = sql();
  count_function_calls(db);
  Queue queue = PostgresTest::open();
  std::vector<NewJob> jobs(20000, job("q"));
  must(queue.enqueue_batch(jobs));
  std::set<JobId> handed_out;
  // Leases and completes for `how_long`; every job once.
  auto work = [&](std::chrono::milliseconds how_long) {
    const auto until = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < until) {
      auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 5}));
      ASSERT_FALSE(leased.empty());
      std::vector<LeasedRef> refs;
      for (const Job& j : leased) {
        ASSERT_TRUE(handed_out.insert(j.id).second) << "job " << j.id << " handed out twice";
        refs.push_back(LeasedRef{j.id, *j.lease_token});
      }
      for (bool done : must(queue.complete_batch(refs))) ASSERT_TRUE(done);
      std::this_thread::sleep_for(10ms);
    }
  };
  auto lanes_calls = [&] { return lease_lanes_calls(db); };
  work(1500ms);
  EXPECT_EQ(lanes_calls(), 0) << "leased lane by lane with nothing held";

  SqlConnection holder = sql();
  holder.exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
  holder.exec("SELECT count(*) FROM pg_class");
  for (int i = 0; i < 1100; ++i) db.exec("SELECT pg_current_xact_id()");
  work(3s);
  const long long during = lanes_calls();
  EXPECT_GT(during, 0) << "still leasing from the head under a held snapshot";

  holder.exec("COMMIT");
  work(1s);  // the next probe sees the holder gone; one lease from the head finds it short
  const long long after_hold = lanes_calls();
  work(1500ms);  // about 100 leases
  // At most the one lease from the head that found the head short, should its backend have
  // reported it late.
  EXPECT_LE(lanes_calls() - after_hold, 1) << "still leasing lane by lane after the holder ended";
}

// The default again, with nothing held: a lease from the head that walks far past entries of
// jobs already gone (here 70,000, deleted, and no vacuum since) turns the process to the lanes,
// which start past them; every job is still handed out once, in order.
TEST_F(LeaseFrontierTest, LeasesTurnToTheLanesWhenTheHeadIsLongWithNothingHeld) {
  SqlConnection db = sql();
  count_function_calls(db);
  db.exec("ALTER TABLE readpast.live SET (autovacuum_enabled = off)");
  Queue queue = PostgresTest::open();
  std::vector<NewJob> jobs(80000, job("q"));
  must(queue.enqueue_batch(jobs));
  db.exec("SET session_replication_role = replica");  // no triggers: only the rows go
  db.exec(
      "DELETE FROM readpast.live WHERE id IN "
      "(SELECT id FROM readpast.live ORDER BY id LIMIT 70000)");
  std::vector<JobId> left;
  for (const auto& row : db.query("SELECT id FROM readpast.live ORDER BY id")) {
    left.push_back(std::stoll(*row[0]));
  }
  ASSERT_EQ(left.size(), 10000u);
  EXPECT_EQ(drain(queue, "q", 50), left) << "not every job once, in order";
  // The long head is q's own: another queue of the same process, with a clean head, still
  // leases from it (lease_head_walk) while q's lanes are on (LeaseMode::kLongHeadFor).
  std::vector<NewJob> others(1000, job("other"));
  std::vector<JobId> other_ids;
  for (const Enqueued& e : must(queue.enqueue_batch(others))) other_ids.push_back(e.id);
  EXPECT_EQ(drain(queue, "other", 50), other_ids) << "not every job once, in order";
  // q: 200 leases of 50 and an empty one; the other queue: 20 and an empty one. A backend
  // reports its counts when it goes idle, or up to 10 s later when it reported within the last
  // second, so each count is read until it gets there (a count that stands still for a
  // few seconds may still be waiting for that report).
  long long calls = 0;
  long long from_head = 0;
  for (int i = 0; i < 30 && (calls < 150 || from_head < 21); ++i) {
    std::this_thread::sleep_for(1s);
    calls = lease_lanes_calls_reported(db);
    from_head = lease_lanes_calls_reported(db, "lease_head_walk");
  }
  EXPECT_GE(calls, 150) << "leased from the long head to the end";
  EXPECT_GE(from_head, 21) << "the other queue's leases";
  EXPECT_LE(lease_lanes_calls(db), 201) << "the other queue leased by lane";
}

// The bookkeeping alone: reports as the lease statement would give them.
LeaseReport report(std::uint64_t xmin, std::uint64_t xmax, TimePoint at, int max_jobs,
                   std::vector<std::pair<int, LaneKey>> taken) {
  LeaseReport r;
  r.snapshot_xmin = xmin;
  r.snapshot_xmax = xmax;
  r.leased_at = at;
  r.max_jobs = max_jobs;
  r.taken = std::move(taken);
  return r;
}

TimePoint at_seconds(int s) {
  return TimePoint(std::chrono::seconds(1'800'000'000 + s));
}

TEST(LeaseFrontierBookkeeping, TheFirstLeaseAndOneAfterAFailureReadFromTheHead) {
  LeaseFrontier f;
  const auto now = std::chrono::steady_clock::now();
  EXPECT_TRUE(f.plan(now).from_head);
  EXPECT_FALSE(f.plan(now).from_head);
  f.lease_failed();
  EXPECT_TRUE(f.plan(now).from_head);
  EXPECT_FALSE(f.plan(now + 1s).from_head);
  // The third scan looks back from where the frontiers stood at the first.
  const auto third = f.plan(now + LeaseFrontier::kHeadScanFirst + 1s);
  EXPECT_FALSE(third.from_head);
  EXPECT_TRUE(third.look_back);
  f.lease_failed();
  EXPECT_TRUE(f.plan(now + LeaseFrontier::kHeadScanFirst + 2s).from_head);
}

// Scans behind the frontiers: from the head for the first two; then each starts every lane
// where its frontier stood when the scan before the previous one started. They come every
// 5 s, then every 10 s while they find nothing behind the frontiers, every 5 s again once one
// does; and from the head every kFullHeadScanEvery.
TEST(LeaseFrontierBookkeeping, ScansLookBackToTheFrontiersOfTwoScansAgoAndComeLessOften) {
  LeaseFrontier f;
  auto now = std::chrono::steady_clock::now();
  const auto first = now;
  int xid = 5;
  int seconds = 10;
  // A lease as planned at `now`, taking one job dated a second before it (or `taken`).
  auto lease = [&](const LeasePlan& plan, std::optional<LaneKey> taken = std::nullopt) {
    LeaseReport r = report(xid, xid, at_seconds(seconds), 10,
                           {{100, taken.value_or(LaneKey{at_seconds(seconds - 1), 10 + xid})}});
    r.from_head = plan.from_head;
    r.look_back = plan.look_back;
    f.record(r, now);
    ++xid;
    ++seconds;
  };
  auto frontier = [&] {
    const LeasePlan plan = f.plan(now);
    EXPECT_FALSE(plan.from_head || plan.look_back);
    return plan.lanes.empty() ? std::nullopt : std::optional(plan.lanes[0].from);
  };
  ASSERT_TRUE(f.plan(now).from_head);  // the first scan, at `first`: no frontier yet
  lease({});
  lease({});
  const auto at_second = frontier();
  ASSERT_TRUE(at_second.has_value());
  now += LeaseFrontier::kHeadScanFirst;
  const LeasePlan second = f.plan(now);
  ASSERT_TRUE(second.from_head);
  lease(second);  // nothing behind the frontier: the next scan in 10 s
  lease({});
  const auto at_third = frontier();
  EXPECT_EQ(f.plan(now + LeaseFrontier::kHeadScanFirst).lanes.size(), 1u) << "not a scan";
  now += LeaseFrontier::kHeadScanAtMost;
  const LeasePlan third = f.plan(now);
  ASSERT_TRUE(third.look_back);
  EXPECT_TRUE(third.lanes.empty()) << "the first scan had no frontier to start from";
  lease(third);
  lease({});
  now += LeaseFrontier::kHeadScanAtMost;
  const LeasePlan fourth = f.plan(now);
  ASSERT_TRUE(fourth.look_back);
  ASSERT_EQ(fourth.lanes.size(), 1u);
  EXPECT_EQ(fourth.lanes[0].from, *at_second) << "not where the frontier stood at the second";
  // It finds a job behind the frontier: the next scan in 5 s, from the third's frontiers.
  lease(fourth, LaneKey{at_second->run_at - 1s, 2});
  const LeasePlan fifth = f.plan(now + LeaseFrontier::kHeadScanFirst);
  ASSERT_TRUE(fifth.look_back);
  ASSERT_EQ(fifth.lanes.size(), 1u);
  EXPECT_EQ(fifth.lanes[0].from, *at_third);
  // From the head again kFullHeadScanEvery after the last scan that was.
  now = first + LeaseFrontier::kFullHeadScanEvery + LeaseFrontier::kHeadScanFirst;
  EXPECT_TRUE(f.plan(now).from_head);
}

TEST(LeaseFrontierBookkeeping, ALeaseIsNotPassedUntilTheTransactionsItCouldNotSeeHaveEnded) {
  LeaseFrontier f;
  const auto now = std::chrono::steady_clock::now();
  f.plan(now);
  // Lease 1 took up to key (t0, 10); transaction 50 was running at its snapshot.
  f.record(
      report(50, 60, at_seconds(10), 2, {{100, {at_seconds(0), 9}}, {100, {at_seconds(0), 10}}}),
      now);
  EXPECT_TRUE(f.plan(now).lanes.empty()) << "nothing settles lease 1 yet";
  // Lease 2 still sees 50 running.
  f.record(
      report(50, 70, at_seconds(11), 2, {{100, {at_seconds(1), 20}}, {100, {at_seconds(1), 21}}}),
      now);
  EXPECT_TRUE(f.plan(now).lanes.empty());
  // Lease 3: every transaction below 60 has ended, which settles lease 1 (not lease 2).
  f.record(
      report(60, 80, at_seconds(12), 2, {{100, {at_seconds(2), 30}}, {100, {at_seconds(2), 31}}}),
      now);
  auto plan = f.plan(now);
  ASSERT_EQ(plan.lanes.size(), 1u);
  EXPECT_EQ(plan.lanes[0].priority, 100);
  EXPECT_EQ(plan.lanes[0].from, (LaneKey{at_seconds(0), 10}));
  EXPECT_EQ(plan.lanes[0].marks_from, 60u) << "marks of transactions lease 1 could not rule out";
}

TEST(LeaseFrontierBookkeeping, ALaneReadToItsEndStopsDeltaBeforeTheLease) {
  LeaseFrontier f;
  const auto now = std::chrono::steady_clock::now();
  f.plan(now);
  // Not full: the lane was read to its end; nothing was running (xmin = xmax).
  f.record(report(90, 90, at_seconds(20), 10, {{100, {at_seconds(19), 5}}}), now);
  auto plan = f.plan(now);
  ASSERT_EQ(plan.lanes.size(), 1u);
  EXPECT_EQ(
      plan.lanes[0].from,
      (LaneKey{at_seconds(20) - std::chrono::duration_cast<Duration>(LeaseFrontier::kDelta), 0}));
}

TEST(LeaseFrontierBookkeeping, LanesAFullBatchDidNotReachKeepTheirFrontier) {
  LeaseFrontier f;
  const auto now = std::chrono::steady_clock::now();
  f.plan(now);
  // One job from each lane, the batch not full: both lanes were read to their end.
  f.record(report(5, 5, at_seconds(30), 10, {{0, {at_seconds(29), 1}}, {100, {at_seconds(29), 2}}}),
           now);
  auto plan = f.plan(now);
  ASSERT_EQ(plan.lanes.size(), 2u);
  const LaneKey lane_100 = plan.lanes[1].from;
  // A full batch from lane 0 alone: lane 100 was not read, and must not move.
  std::vector<std::pair<int, LaneKey>> taken;
  for (int i = 0; i < 10; ++i) taken.push_back({0, {at_seconds(31), 100 + i}});
  f.record(report(6, 6, at_seconds(40), 10, taken), now);
  plan = f.plan(now);
  ASSERT_EQ(plan.lanes.size(), 2u);
  EXPECT_EQ(plan.lanes[0].from, (LaneKey{at_seconds(31), 109}));
  EXPECT_EQ(plan.lanes[1].from, lane_100);
  // A batch that is not full read lane 100 too, though it took nothing there.
  f.record(report(7, 7, at_seconds(50), 10, {{0, {at_seconds(41), 200}}}), now);
  plan = f.plan(now);
  ASSERT_EQ(plan.lanes.size(), 2u);
  EXPECT_GT(plan.lanes[1].from, lane_100);
}

TEST(LeaseFrontierBookkeeping, ARescueStartsAMarginBeforeThePreviousOneAndReadsAllNowAndThen) {
  LeaseFrontier f;
  const auto now = std::chrono::steady_clock::now();
  EXPECT_FALSE(f.rescue_plan(now).has_value()) << "the first rescue reads every running job";
  f.rescue_done(now);  // no lease yet: the database's time is not known
  EXPECT_FALSE(f.rescue_plan(now + 1s).has_value());
  f.plan(now);
  // The database said 100 s at `now`.
  f.record(report(1, 1, at_seconds(100), 10, {{100, {at_seconds(99), 1}}}), now);
  f.rescue_plan(now + 2s);
  f.rescue_done(now + 2s);
  const auto margin = std::chrono::duration_cast<Duration>(LeaseFrontier::kRescueMargin);
  EXPECT_EQ(f.rescue_plan(now + 3s), at_seconds(102) - margin);
  EXPECT_FALSE(f.rescue_plan(now + 3s + LeaseFrontier::kFullRescueEvery).has_value());
}

TEST(LeaseFrontierBookkeeping, AFrontierNoLeaseRenewedForTenMinutesIsDropped) {
  // Marks are kept an hour (migration 11): a frontier must not rest on a lease older than
  // kBasisAtMost, or it would need marks that are gone.
  LeaseFrontier f;
  const auto start = std::chrono::steady_clock::now();
  f.plan(start);
  f.record(report(60, 60, at_seconds(10), 1, {{100, {at_seconds(0), 10}}}), start);
  ASSERT_EQ(f.plan(start + 1s).lanes.size(), 1u);
  const auto later = start + LeaseFrontier::kBasisAtMost + 1s;
  EXPECT_TRUE(f.plan(later).lanes.empty()) << "the lane's head, not a frontier that old";
  // A lease now does not bring it back from the old lease alone: only from itself on.
  f.record(report(80, 80, at_seconds(700), 1, {{100, {at_seconds(690), 40}}}), later);
  const auto plan = f.plan(later);
  ASSERT_EQ(plan.lanes.size(), 1u);
  EXPECT_EQ(plan.lanes[0].marks_from, 80u);
  EXPECT_EQ(plan.lanes[0].basis_at, later);
}

TEST(LeaseFrontierBookkeeping, ALeaseThatTookNothingProvesNothing) {
  // It may have read nothing at all (a paused or limited queue).
  LeaseFrontier f;
  const auto now = std::chrono::steady_clock::now();
  f.plan(now);
  f.record(report(5, 5, at_seconds(50), 10, {}), now);
  EXPECT_TRUE(f.plan(now).lanes.empty());
  EXPECT_FALSE(f.earliest_start().has_value());
}

}  // namespace
}  // namespace readpast::test
