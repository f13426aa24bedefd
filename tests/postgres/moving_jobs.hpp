// Helpers for the tests of jobs that move between the tables behind the jobs view (live,
// scheduled, waiting, done: migrations 10, 17 and 18): where a job is, who holds a key, and a
// way to have another transaction's move commit while the statement under test waits for the
// moved row, which is the race every move brings.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "pg_test_util.hpp"

namespace readpast::test {

class MovingJobsTest : public PostgresTest {
 protected:
  // A job of queue q enqueued after `parent`: waiting while the parent is unfinished.
  JobId dependent_of(Queue& queue, JobId parent, std::optional<std::string> key = std::nullopt) {
    NewJob then = job("q", "then");
    then.after = {parent};
    then.unique_key = std::move(key);
    return must(queue.enqueue(then)).id;
  }
  // Where job `id` is: "live", "running", "scheduled", "waiting", "done" or "" (nowhere).
  std::string table_of(SqlConnection& db, JobId id) {
    const std::string n = std::to_string(id);
    return db.scalar("SELECT coalesce((SELECT 'live' FROM readpast.live WHERE id = " + n +
                     "), (SELECT 'running' FROM readpast.running WHERE id = " + n +
                     "), (SELECT 'scheduled' FROM readpast.scheduled WHERE id = " + n +
                     "), (SELECT 'waiting' FROM readpast.waiting WHERE id = " + n +
                     "), (SELECT 'done' FROM readpast.done WHERE id = " + n + "), '')");
  }
  std::string key_holder(SqlConnection& db, const std::string& key) {
    return db.scalar(
        "SELECT coalesce((SELECT job_id::text FROM readpast.unique_keys "
        "WHERE queue = 'q' AND unique_key = '" +
        key + "'), '')");
  }
  // Blocks until some session other than the test's waits for a lock, so that the other
  // transaction's commit comes while the statement under test waits for its row.
  void until_a_session_waits_for_a_lock(SqlConnection& db) {
    using namespace std::chrono_literals;
    for (int i = 0; i < 500; ++i) {
      if (db.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'") != "0") {
        return;
      }
      std::this_thread::sleep_for(10ms);
    }
    FAIL() << "no session ever waited for a lock";
  }
};

}  // namespace readpast::test
