// Jobs scheduled for later in readpast.scheduled (migration 18): an available job whose run_at
// is later than the statement that made it available is kept out of live, whichever statement
// made it so, and the first lease of its queue after its run_at promotes it to live and hands
// it out in order with the others; its unique key and error history go with it. The contract's
// cases (delayed run_at, retries with backoff, releases with a delay) are in the shared
// conformance suite; these check where the rows are, and the races a move brings: a statement
// that waits for a row another transaction moves does not follow it into its new table.
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "moving_jobs.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

using ScheduledJobsTest = MovingJobsTest;

NewJob later(std::string payload, Duration delay, int priority = kDefaultPriority) {
  NewJob j = job("q", std::move(payload));
  j.delay = delay;
  j.priority = priority;
  return j;
}

// A delayed job waits in scheduled with its key; the first lease after its run_at takes it
// before a due job of lower priority, in that same lease, and the key stays with it.
TEST_F(ScheduledJobsTest, ADelayedJobWaitsInScheduledAndTheFirstLeaseAfterItTakesItInOrder) {
  Queue queue = open();
  SqlConnection db = sql();
  NewJob keyed = later("urgent", 300ms, 0);
  keyed.unique_key = "k";
  const JobId urgent = must(queue.enqueue(keyed)).id;
  const JobId routine = must(queue.enqueue(job("q", "routine"))).id;
  EXPECT_EQ(table_of(db, urgent), "scheduled");
  EXPECT_EQ(table_of(db, routine), "live");
  EXPECT_EQ(key_holder(db, "k"), std::to_string(urgent));
  EXPECT_EQ(must(queue.enqueue(keyed)).id, urgent) << "the scheduled job's key was not held";

  std::this_thread::sleep_for(350ms);
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 1}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].id, urgent) << "the lease handed out a due job of lower priority first";
  EXPECT_EQ(table_of(db, urgent), "running");
  EXPECT_EQ(key_holder(db, "k"), std::to_string(urgent));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.scheduled"), "0");
}

// A failure retried after a backoff, and a release with a delay, move the job to scheduled
// with its key and its error history; one released without a delay goes back to live.
TEST_F(ScheduledJobsTest, RetriesAndDelayedReleasesMoveToScheduledWithKeyAndHistory) {
  Queue queue = open();
  SqlConnection db = sql();
  NewJob keyed = job("q");
  keyed.unique_key = "k";
  const JobId id = must(queue.enqueue(keyed)).id;
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  FailOptions in_an_hour;
  in_an_hour.retry_after = 1h;
  EXPECT_EQ(must(queue.fail(id, *leased[0].lease_token, "boom", in_an_hour)),
            FailOutcome::kRetrying);
  EXPECT_EQ(table_of(db, id), "scheduled");
  EXPECT_EQ(key_holder(db, "k"), std::to_string(id));
  EXPECT_EQ(must(queue.get(id)).errors.size(), 1u);
  EXPECT_EQ(must(queue.get(id)).state, JobState::kAvailable);

  db.exec("UPDATE readpast.jobs SET run_at = now() WHERE id = " + std::to_string(id));
  leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(table_of(db, id), "running");
  must(queue.release(id, *leased[0].lease_token, 1h));
  EXPECT_EQ(table_of(db, id), "scheduled");
  EXPECT_EQ(key_holder(db, "k"), std::to_string(id));
  EXPECT_EQ(must(queue.get(id)).errors.size(), 1u);

  db.exec("UPDATE readpast.jobs SET run_at = now() WHERE id = " + std::to_string(id));
  leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.release(id, *leased[0].lease_token));
  EXPECT_EQ(table_of(db, id), "live");
}

// The engine's fail and release write a job retried or released later straight to scheduled,
// in their own statement (migration 19; from `running` since migration 23): no row of live is
// written first and then moved by live_schedule_later, which cost a call and two statements
// per job (run 53: 0.62 of schema 17 for failures retried later). Keyed, so that the key's staying
// is checked on this path, and a batch, so that jobs retried now and later are split by the one
// statement.
TEST_F(ScheduledJobsTest, FailAndReleaseMoveJobsDueLaterToScheduledWithoutUpdatingLive) {
  Queue queue = open();
  SqlConnection db = sql();
  NewJob keyed = job("q", "keyed");
  keyed.unique_key = "k";
  const JobId later_one = must(queue.enqueue(keyed)).id;
  const JobId now_one = must(queue.enqueue(job("q", "now"))).id;
  const JobId released = must(queue.enqueue(job("q", "released"))).id;
  const auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 3}));
  ASSERT_EQ(leased.size(), 3u);
  auto token_of = [&](JobId id) {
    for (const auto& l : leased) {
      if (l.id == id) return *l.lease_token;
    }
    throw std::logic_error("not leased");
  };
  db.exec("CREATE TABLE live_writes (id bigint, op text)");
  db.exec(
      "CREATE FUNCTION count_live_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
      "INSERT INTO live_writes VALUES (NEW.id, TG_OP); RETURN NULL; END $$");
  db.exec(
      "CREATE TRIGGER count_live_write AFTER INSERT OR UPDATE ON readpast.live FOR EACH ROW "
      "EXECUTE FUNCTION count_live_write()");

  FailOptions in_an_hour;
  in_an_hour.retry_after = 1h;
  FailOptions at_once;
  at_once.retry_after = Duration::zero();
  const auto outcomes = must(queue.fail_batch(
      std::vector<FailRequest>{{later_one, token_of(later_one), "boom", in_an_hour},
                               {now_one, token_of(now_one), "boom", at_once}}));
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0], FailOutcome::kRetrying);
  EXPECT_EQ(outcomes[1], FailOutcome::kRetrying);
  must(queue.release(released, token_of(released), 1h));

  EXPECT_EQ(table_of(db, later_one), "scheduled");
  EXPECT_EQ(table_of(db, released), "scheduled");
  EXPECT_EQ(table_of(db, now_one), "live");
  EXPECT_EQ(db.scalar("SELECT string_agg(id || ':' || op, ',') FROM live_writes"),
            std::to_string(now_one) + ":INSERT")
      << "a job due later was written to live before it moved";
  EXPECT_EQ(key_holder(db, "k"), std::to_string(later_one));
  const Job retried = must(queue.get(later_one));
  EXPECT_EQ(retried.state, JobState::kAvailable);
  EXPECT_EQ(retried.attempts, 1);
  ASSERT_EQ(retried.errors.size(), 1u);
  EXPECT_EQ(retried.errors[0].error, "boom");
  const Job given_back = must(queue.get(released));
  EXPECT_EQ(given_back.attempts, 0) << "the release did not give back its attempt";
  EXPECT_GT(given_back.run_at, std::chrono::system_clock::now() + 50min);
}

// Edits through the view: a later run_at moves an available job to scheduled, an earlier one
// leaves it there for the next lease to promote, a delete finds it there.
TEST_F(ScheduledJobsTest, EditsThroughTheViewMoveAJobBetweenLiveAndScheduled) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId id = must(queue.enqueue(job("q"))).id;
  const std::string n = std::to_string(id);
  EXPECT_EQ(db.scalar("UPDATE readpast.jobs SET run_at = now() + interval '1 hour', priority = 7 "
                      "WHERE id = " +
                      n + " RETURNING priority"),
            "7");
  EXPECT_EQ(table_of(db, id), "scheduled");
  EXPECT_TRUE(must(queue.lease({.queue = "q", .worker_id = "w"})).empty());
  db.exec("UPDATE readpast.jobs SET run_at = now() WHERE id = " + n);
  EXPECT_EQ(table_of(db, id), "scheduled");
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  EXPECT_EQ(leased[0].priority, 7);

  const JobId gone = must(queue.enqueue(later("gone", 1h))).id;
  EXPECT_EQ(
      db.scalar("DELETE FROM readpast.jobs WHERE id = " + std::to_string(gone) + " RETURNING id"),
      std::to_string(gone));
  EXPECT_EQ(table_of(db, gone), "");
}

// A cancel that waits for a scheduled job's row while a lease promotes it to live still cancels
// it: the engine runs the cancel again for the ids it missed.
TEST_F(ScheduledJobsTest, ACancelRacingAPromotionStillCancels) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId id = must(queue.enqueue(later("soon", 100ms))).id;
  std::this_thread::sleep_for(150ms);

  SqlConnection promoter = sql();
  promoter.exec("BEGIN");
  EXPECT_EQ(promoter.scalar("SELECT readpast.promote_due('q')"), "1");
  auto cancelled =
      std::async(std::launch::async, [&] { return queue.cancel(std::vector<JobId>{id}); });
  until_a_session_waits_for_a_lock(db);
  promoter.exec("COMMIT");
  EXPECT_EQ(must(cancelled.get()), std::vector<JobId>{id});
  EXPECT_EQ(must(queue.get(id)).state, JobState::kCancelled);
  EXPECT_TRUE(must(queue.lease({.queue = "q", .worker_id = "w"})).empty());
}

// The enqueue of a dependent that waits for a scheduled dependency's row while a lease
// promotes it marks it in live: when it finishes, the dependent is told.
TEST_F(ScheduledJobsTest, ADependencyPromotedWhileLockedForADependentStillTellsIt) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId parent = must(queue.enqueue(later("parent", 100ms))).id;
  std::this_thread::sleep_for(150ms);

  SqlConnection promoter = sql();
  promoter.exec("BEGIN");
  EXPECT_EQ(promoter.scalar("SELECT readpast.promote_due('q')"), "1");
  auto enqueued = std::async(std::launch::async, [&] { return dependent_of(queue, parent); });
  until_a_session_waits_for_a_lock(db);
  promoter.exec("COMMIT");
  const JobId child = enqueued.get();
  EXPECT_EQ(db.scalar("SELECT notify FROM readpast.live WHERE id = " + std::to_string(parent)),
            "t");
  EXPECT_EQ(must(queue.get(child)).state, JobState::kWaiting);

  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.complete(parent, *leased[0].lease_token));
  must(queue.resolve_dependencies());
  EXPECT_EQ(must(queue.get(child)).state, JobState::kAvailable) << "the dependent was never told";
}

// The same for a dependency that a failure moves back to scheduled while the dependent's
// enqueue waits for its row in live.
TEST_F(ScheduledJobsTest, ADependencyRetriedLaterWhileLockedForADependentStillTellsIt) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId parent = must(queue.enqueue(job("q", "parent"))).id;
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);

  SqlConnection failer = sql();
  failer.exec("BEGIN");
  EXPECT_EQ(failer.scalar("SELECT readpast.fail(" + std::to_string(parent) + ", '" +
                          leased[0].lease_token->hex() + "', 'boom', interval '1 hour')"),
            "available");
  auto enqueued = std::async(std::launch::async, [&] { return dependent_of(queue, parent); });
  until_a_session_waits_for_a_lock(db);
  failer.exec("COMMIT");
  const JobId child = enqueued.get();
  EXPECT_EQ(table_of(db, parent), "scheduled");
  EXPECT_EQ(db.scalar("SELECT notify FROM readpast.scheduled WHERE id = " + std::to_string(parent)),
            "t");
  EXPECT_EQ(must(queue.get(child)).state, JobState::kWaiting);
}

// The promotion reads scheduled by its index whatever the statistics say: planned while the
// table was analysed empty, it does not read the whole table once it has grown.
TEST_F(ScheduledJobsTest, ThePromotionReadsItsIndexWhateverTheStatisticsSay) {
  Queue queue = open();
  SqlConnection db = sql();
  db.exec("ANALYZE readpast.scheduled");
  for (int i = 0; i < 8; ++i) db.exec("SELECT readpast.promote_due('q')");
  db.exec(
      "INSERT INTO readpast.scheduled (id, queue, run_at) "
      "SELECT nextval('readpast.jobs_id_seq'), 'q', now() + interval '1 hour' "
      "FROM generate_series(1, 5000)");
  const JobId due = must(queue.enqueue(later("due", 50ms))).id;
  std::this_thread::sleep_for(100ms);
  db.exec("BEGIN");
  EXPECT_EQ(db.scalar("SELECT readpast.promote_due('q')"), "1");
  EXPECT_EQ(db.scalar("SELECT seq_scan FROM pg_stat_xact_user_tables "
                      "WHERE relid = 'readpast.scheduled'::regclass"),
            "0");
  db.exec("COMMIT");
  EXPECT_EQ(table_of(db, due), "live");
}

}  // namespace
}  // namespace readpast::test
