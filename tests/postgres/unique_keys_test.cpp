// Unique keys held in readpast.unique_keys (migration 15): every way a job enters the live
// states claims its key (the engine's statements, the SQL functions, the jobs view's trigger),
// and live's triggers give it back or move it whenever a job leaves them or changes its key,
// through the engine, the SQL functions or an application's own SQL, as the partial unique
// index of schema 14 did. The contract's cases (a held key hands back its holder, a finished
// job frees it) are in the shared conformance suite; these are the paths only SQL reaches,
// and the race.
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "engines/postgres/postgres_sql.hpp"
#include "pg_test_util.hpp"

namespace readpast::test {
namespace {

class UniqueKeysTest : public PostgresTest {
 protected:
  NewJob keyed(std::string key, std::string queue = "q") {
    NewJob j = job(std::move(queue));
    j.unique_key = std::move(key);
    return j;
  }
  std::string holders(SqlConnection& db) {
    return db.scalar(
        "SELECT coalesce(string_agg(queue || '/' || unique_key || '=' || job_id, ' ' "
        "ORDER BY queue, unique_key), '') FROM readpast.unique_keys");
  }
};

TEST_F(UniqueKeysTest, EveryWayOutOfTheLiveStatesGivesTheKeyBack) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId completed = must(queue.enqueue(keyed("a"))).id;
  const JobId cancelled = must(queue.enqueue(keyed("b"))).id;
  const JobId died = must(queue.enqueue(keyed("c"))).id;
  const JobId deleted = must(queue.enqueue(keyed("d"))).id;
  EXPECT_EQ(holders(db), "q/a=" + std::to_string(completed) + " q/b=" + std::to_string(cancelled) +
                             " q/c=" + std::to_string(died) + " q/d=" + std::to_string(deleted));

  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 10}));
  ASSERT_EQ(leased.size(), 4u);
  for (const Job& j : leased) {
    if (j.id == completed) must(queue.complete(j.id, *j.lease_token));
    if (j.id == died) {
      NewJob once = keyed("c");
      EXPECT_EQ(must(queue.enqueue(once)).id, died) << "a running job holds its key";
    }
  }
  must(queue.cancel(std::vector<JobId>{cancelled}));
  db.exec("UPDATE readpast.jobs SET state = 'dead', finished_at = now() WHERE id = " +
          std::to_string(died));
  db.exec("DELETE FROM readpast.jobs WHERE id = " + std::to_string(deleted));
  EXPECT_EQ(holders(db), "");
  for (const char* key : {"a", "b", "c", "d"}) {
    const auto again = must(queue.enqueue(keyed(key)));
    EXPECT_TRUE(again.inserted) << key;
  }
}

TEST_F(UniqueKeysTest, ChangingAJobsKeyOrQueueBySqlMovesItsClaim) {
  Queue queue = open();
  SqlConnection db = sql();
  const JobId first = must(queue.enqueue(keyed("a"))).id;
  const JobId second = must(queue.enqueue(keyed("b"))).id;
  db.exec("UPDATE readpast.jobs SET unique_key = 'x' WHERE id = " + std::to_string(first));
  EXPECT_EQ(must(queue.enqueue(keyed("x"))).id, first);
  EXPECT_TRUE(must(queue.enqueue(keyed("a"))).inserted) << "the old key stayed held";

  // A key another job holds is refused, and nothing changes.
  EXPECT_THROW(
      db.exec("UPDATE readpast.live SET unique_key = 'x' WHERE id = " + std::to_string(second)),
      std::runtime_error);
  EXPECT_EQ(must(queue.get(second)).unique_key, "b");

  db.exec("UPDATE readpast.live SET queue = 'other' WHERE id = " + std::to_string(second));
  EXPECT_EQ(must(queue.enqueue(keyed("b", "other"))).id, second);
  EXPECT_TRUE(must(queue.enqueue(keyed("b"))).inserted);
  db.exec("UPDATE readpast.live SET unique_key = NULL WHERE id = " + std::to_string(second));
  EXPECT_TRUE(must(queue.enqueue(keyed("b", "other"))).inserted);
}

// Inserts by hand through the view hold the key as the engine's enqueue does, and one that
// meets a held key fails with unique_violation, as the unique index made it before schema 15.
TEST_F(UniqueKeysTest, AnInsertBySqlHoldsItsKeyOrFailsOnAHeldOne) {
  Queue queue = open();
  SqlConnection db = sql();
  const std::string id =
      db.scalar("INSERT INTO readpast.jobs (queue, unique_key) VALUES ('q', 'k') RETURNING id");
  EXPECT_EQ(std::to_string(must(queue.enqueue(keyed("k"))).id), id);
  try {
    db.exec("INSERT INTO readpast.jobs (queue, unique_key) VALUES ('q', 'k')");
    ADD_FAILURE() << "a second job took a held key";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate key value violates unique constraint"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.live"), "1");
  // A dead job retried while its key is held stays dead (retry's kConflict path).
  db.exec(
      "INSERT INTO readpast.jobs (queue, unique_key, state, finished_at) "
      "VALUES ('q', 'k', 'dead', now())");
  const JobId dead = std::stoll(db.scalar("SELECT id FROM readpast.done"));
  EXPECT_TRUE(must(queue.retry(std::vector<JobId>{dead})).empty());
  db.exec("DELETE FROM readpast.jobs WHERE id = " + id);
  EXPECT_EQ(must(queue.retry(std::vector<JobId>{dead})), std::vector<JobId>{dead});
  EXPECT_EQ(holders(db), "q/k=" + std::to_string(dead));

  // A finished job made live again through the view claims its key, or fails on a held one.
  db.exec(
      "INSERT INTO readpast.jobs (queue, unique_key, state, finished_at) "
      "VALUES ('q', 'k', 'cancelled', now()), ('q', 'other', 'cancelled', now())");
  EXPECT_THROW(db.exec("UPDATE readpast.jobs SET state = 'available', finished_at = NULL "
                       "WHERE state = 'cancelled' AND unique_key = 'k'"),
               std::runtime_error);
  db.exec(
      "UPDATE readpast.jobs SET state = 'available', finished_at = NULL "
      "WHERE state = 'cancelled' AND unique_key = 'other'");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.unique_keys k JOIN readpast.live j "
                      "ON j.id = k.job_id AND j.unique_key = 'other'"),
            "1");
}

// A role that may only insert jobs (and read them) enqueues with a key: the triggers write
// unique_keys as its owner.
TEST_F(UniqueKeysTest, ARoleWithoutRightsOnTheKeysTableInsertsKeyedJobs) {
  SqlConnection db = sql();
  const std::string role = "\"producer_" + db.scalar("SELECT current_database()") + "\"";
  db.exec("CREATE ROLE " + role + " NOLOGIN");
  db.exec("GRANT USAGE ON SCHEMA readpast TO " + role);
  db.exec("GRANT SELECT, INSERT ON readpast.jobs, readpast.live TO " + role);
  db.exec("GRANT USAGE ON SEQUENCE readpast.jobs_id_seq TO " + role);
  db.exec("SET ROLE " + role);
  db.exec("INSERT INTO readpast.jobs (queue, unique_key) VALUES ('q', 'k')");
  EXPECT_THROW(db.exec("INSERT INTO readpast.jobs (queue, unique_key) VALUES ('q', 'k')"),
               std::runtime_error);
  db.exec("RESET ROLE");
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.unique_keys"), "1");
  db.exec("DROP OWNED BY " + role);
  db.exec("DROP ROLE " + role);
}

// Producers race to enqueue one key while workers lease and complete its jobs. At no moment
// may two live jobs hold the key: a sampler reads how many do, in one snapshot each, all the
// while. Every id an enqueue handed back is a job with that key, every job ran once and
// succeeded, and each enqueue that inserted made a job no other enqueue inserted.
// A keyed job enqueued alone goes through enqueue_one_keyed, which PostgreSQL plans once per
// session; the batch statement, for a batch of one, was planned afresh at every call under
// plan_cache_mode = auto (0.80 of schema 14's single keyed enqueues, docs/benchmarks.md run
// 44). Prepared here as the engine prepares them, executed as its calls would.
TEST_F(UniqueKeysTest, AKeyedJobEnqueuedAloneIsPlannedOncePerSession) {
  open();  // the schema
  const auto schema = must(detail::pg::SchemaName::parse("readpast"));
  const detail::pg::Sql sql(schema);
  SqlConnection db = this->sql();
  db.exec("PREPARE one AS " + sql.enqueue_one_keyed.sql);
  db.exec("PREPARE batch AS " + sql.enqueue.sql);
  using One = detail::pg::sql::enqueue_one_keyed;
  using Batch = detail::pg::sql::enqueue;
  static_assert(One::queue == 1 && One::unique_key == 2 && One::payload == 3 &&
                    One::priority == 4 && One::run_at == 5 && One::delay_us == 6 &&
                    One::max_attempts == 7,
                "the EXECUTE below lists the parameters in this order");
  static_assert(Batch::queues == 1 && Batch::payloads == 2 && Batch::priorities == 3 &&
                    Batch::run_ats == 4 && Batch::delays_us == 5 && Batch::max_attempts == 6 &&
                    Batch::unique_keys == 7,
                "the EXECUTE below lists the parameters in this order");
  std::set<std::string> ids;
  for (int i = 0; i < 12; ++i) {
    const std::string key = "one-" + std::to_string(i);
    const auto row = db.query("EXECUTE one('q', '" + key + "', 'x', 0, NULL, NULL, 25)").at(0);
    EXPECT_EQ(*row[1], "t") << key;
    ids.insert(*row[0]);
    db.query("EXECUTE batch('{q}', '{x}', '{0}', '{NULL}', '{NULL}', '{25}', '{batch-" +
             std::to_string(i) + "}')");
  }
  EXPECT_EQ(ids.size(), 12u);
  // A held key: the holder comes back, nothing is inserted.
  const auto held = db.query("EXECUTE one('q', 'one-3', 'y', 0, NULL, NULL, 25)").at(0);
  EXPECT_EQ(*held[1], "f");
  EXPECT_TRUE(ids.contains(*held[0]));
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.live WHERE unique_key LIKE 'one-%'"), "12");
  EXPECT_NE(db.scalar("SELECT generic_plans FROM pg_prepared_statements WHERE name = 'one'"), "0");
  EXPECT_EQ(db.scalar("SELECT generic_plans FROM pg_prepared_statements WHERE name = 'batch'"), "0")
      << "the batch statement is planned once now: this test no longer shows why the "
         "single statement exists";
}

TEST_F(UniqueKeysTest, ProducersRacingForOneKeyNeverMakeTwoLiveHolders) {
  constexpr int kProducers = 4;
  constexpr int kEnqueuesEach = 300;
  std::atomic<int> producers_left{kProducers};
  std::atomic<int> most_live{0};
  std::vector<std::vector<Enqueued>> results(kProducers);
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      Queue producer = open();
      for (int i = 0; i < kEnqueuesEach; ++i) {
        results[p].push_back(must(producer.enqueue(keyed("k"))));
      }
      --producers_left;
    });
  }
  threads.emplace_back([&] {
    Queue worker = open();
    for (;;) {
      const bool last_round = producers_left == 0;  // read before the lease: nothing comes after
      auto leased = must(worker.lease({.queue = "q", .worker_id = "w"}));
      if (leased.empty() && last_round) break;
      for (const Job& j : leased) must(worker.complete(j.id, *j.lease_token));
    }
  });
  threads.emplace_back([&] {
    SqlConnection sampler = sql();
    while (producers_left > 0) {
      const int live =
          std::stoi(sampler.scalar("SELECT count(*) FROM readpast.live WHERE unique_key = 'k'"));
      if (live > most_live) most_live = live;
    }
  });
  for (auto& t : threads) t.join();

  EXPECT_LE(most_live.load(), 1);
  SqlConnection db = sql();
  std::set<JobId> inserted;
  std::set<JobId> returned;
  for (const auto& per_producer : results) {
    for (const Enqueued& e : per_producer) {
      returned.insert(e.id);
      if (e.inserted) {
        EXPECT_TRUE(inserted.insert(e.id).second) << "job " << e.id << " twice";
      }
    }
  }
  EXPECT_GT(inserted.size(), 1u) << "the race never let a key go";
  EXPECT_EQ(returned, inserted) << "an enqueue handed back a job no enqueue made";
  Queue reader = open();
  for (const JobId id : inserted) {
    const Job j = must(reader.get(id));
    EXPECT_EQ(j.unique_key, "k");
    EXPECT_EQ(j.attempts, 1) << "job " << id;
    EXPECT_EQ(j.state, JobState::kSucceeded) << "job " << id;
  }
  EXPECT_EQ(db.scalar("SELECT count(*) FROM readpast.jobs"), std::to_string(inserted.size()));
  EXPECT_EQ(holders(db), "");
}

}  // namespace
}  // namespace readpast::test
