// The SQL interface (migration 2, docs/mariadb.md): readpast_enqueue, readpast_lease,
// readpast_complete, readpast_fail, readpast_extend, readpast_release with the engine's
// fencing, interoperating with the C++ API on one database; an enqueue in the caller's own
// transaction commits or rolls back with it.
#include <gtest/gtest.h>
#include <mysql.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "readpast/queue.hpp"
#include "support/engines/mariadb_server.hpp"

namespace readpast {
namespace {

using test::MariadbServer;
using Row = std::vector<std::optional<std::string>>;

// A client session of its own (as another program would have), over TCP as `readpast`.
class Sql {
 public:
  explicit Sql(const std::string& database) : handle_(mysql_init(nullptr)) {
    auto& server = MariadbServer::shared();
    if (mysql_real_connect(handle_.get(), "127.0.0.1", "readpast", nullptr, database.c_str(),
                           static_cast<unsigned>(server.port()), nullptr,
                           CLIENT_MULTI_RESULTS) == nullptr) {
      throw std::runtime_error(mysql_error(handle_.get()));
    }
    // As docs/mariadb.md asks of programs that use the SQL interface.
    query("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  }
  // The rows of the first result (a CALL's others are read and dropped).
  std::vector<Row> query(const std::string& sql) {
    if (mysql_real_query(handle_.get(), sql.data(), sql.size()) != 0) {
      throw std::runtime_error(sql + ": " + mysql_error(handle_.get()));
    }
    std::vector<Row> rows;
    bool first = true;
    do {
      MYSQL_RES* result = mysql_store_result(handle_.get());
      if (result != nullptr) {
        if (first) {
          const unsigned columns = mysql_num_fields(result);
          while (MYSQL_ROW row = mysql_fetch_row(result)) {
            const unsigned long* lengths = mysql_fetch_lengths(result);
            Row values;
            for (unsigned i = 0; i < columns; ++i) {
              if (row[i] == nullptr) {
                values.emplace_back(std::nullopt);
              } else {
                values.emplace_back(std::string(row[i], lengths[i]));
              }
            }
            rows.push_back(std::move(values));
          }
          first = false;
        }
        mysql_free_result(result);
      }
    } while (mysql_next_result(handle_.get()) == 0);
    return rows;
  }
  std::optional<std::string> scalar(const std::string& sql) {
    auto rows = query(sql);
    if (rows.empty() || rows[0].empty()) throw std::runtime_error(sql + ": no row");
    return rows[0][0];
  }

 private:
  struct Close {
    void operator()(MYSQL* handle) const noexcept { mysql_close(handle); }
  };
  std::unique_ptr<MYSQL, Close> handle_;
};

struct Fixture {
  std::string url = MariadbServer::shared().fresh_database_url();
  std::string database = url.substr(url.rfind('/') + 1);
  Queue queue = [&] {
    QueueOptions options;
    options.init_schema = true;
    auto opened = Queue::open(url, options);
    if (!opened) throw std::runtime_error(opened.error().message);
    return std::move(*opened);
  }();
};

TEST(MariadbSql, EnqueuedInSqlLeasedAndCompletedInCxx) {
  Fixture f;
  Sql sql(f.database);
  const std::string id =
      *sql.scalar("SELECT readpast_enqueue('mail', 'hi', NULL, NULL, NULL, NULL)");
  auto leased = f.queue.lease({.queue = "mail", .worker_id = "w"});
  ASSERT_TRUE(leased.has_value()) << leased.error().message;
  ASSERT_EQ(leased->size(), 1u);
  EXPECT_EQ(std::to_string(leased->front().id), id);
  EXPECT_EQ(leased->front().payload, "hi");
  const std::string token = leased->front().lease_token->hex();
  EXPECT_EQ(*sql.scalar("SELECT readpast_extend(" + id + ", '" + token + "', 60000000)"), "1");
  EXPECT_EQ(*sql.scalar("SELECT readpast_complete(" + id + ", 'ffffffffffffffffffffffffffffffff')"),
            "0");
  EXPECT_EQ(*sql.scalar("SELECT readpast_complete(" + id + ", '" + token + "')"), "1");
  EXPECT_EQ(*sql.scalar("SELECT readpast_complete(" + id + ", '" + token + "')"), "0")
      << "a second complete finds the lease gone";
  auto job = f.queue.get(std::stoll(id));
  ASSERT_TRUE(job.has_value()) << job.error().message;
  EXPECT_EQ(job->state, JobState::kSucceeded);
}

TEST(MariadbSql, LeasedInSqlCompletedInCxx) {
  Fixture f;
  NewJob job;
  job.queue = "mail";
  job.payload = "from c++";
  ASSERT_TRUE(f.queue.enqueue(job).has_value());
  Sql sql(f.database);
  auto rows = sql.query("CALL readpast_lease('mail', 'sql-worker', 10, 5000000)");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][2], "running");
  EXPECT_EQ(rows[0][5], "1");
  EXPECT_EQ(rows[0][8], "sql-worker");
  EXPECT_EQ(rows[0][15], "from c++");
  auto token = LeaseToken::from_hex(*rows[0][7]);
  ASSERT_TRUE(token.has_value());
  EXPECT_TRUE(f.queue.complete(std::stoll(*rows[0][0]), *token).has_value());
  EXPECT_TRUE(sql.query("CALL readpast_lease('mail', 'sql-worker', 10, NULL)").empty());
}

TEST(MariadbSql, FailRetriesThenBuriesAndIsFenced) {
  Fixture f;
  Sql sql(f.database);
  const std::string id = *sql.scalar("SELECT readpast_enqueue('mail', 'x', NULL, NULL, 2, NULL)");
  auto lease = [&] {
    auto rows = sql.query("CALL readpast_lease('mail', 'w', 1, NULL)");
    EXPECT_EQ(rows.size(), 1u);
    return rows.empty() ? std::string() : *rows[0][7];
  };
  std::string token = lease();
  EXPECT_EQ(sql.scalar("SELECT readpast_fail(" + id + ", '" + token + "', 'first', 0)"),
            "available");
  EXPECT_EQ(sql.scalar("SELECT readpast_fail(" + id + ", '" + token + "', 'again', 0)"),
            std::nullopt)
      << "a re-sent fail cannot spend a second attempt";
  token = lease();
  EXPECT_EQ(sql.scalar("SELECT readpast_release(" + id + ", '" + token + "', NULL)"), "1");
  token = lease();
  EXPECT_EQ(sql.scalar("SELECT readpast_fail(" + id + ", '" + token + "', 'last', NULL)"), "dead");
  auto job = f.queue.get(std::stoll(id));
  ASSERT_TRUE(job.has_value()) << job.error().message;
  EXPECT_EQ(job->state, JobState::kDead);
  EXPECT_EQ(job->attempts, 2);
  EXPECT_EQ(job->last_error, "last");
}

TEST(MariadbSql, ExpiredLeasesAreRescued) {
  Fixture f;
  Sql sql(f.database);
  const std::string id = *sql.scalar("SELECT readpast_enqueue('m', 'x', NULL, NULL, NULL, NULL)");
  ASSERT_EQ(sql.query("CALL readpast_lease('m', 'w', 1, 1000)").size(), 1u);  // 1 ms
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(sql.scalar("SELECT readpast_rescue_expired('m')"), "1");
  auto job = f.queue.get(std::stoll(id));
  ASSERT_TRUE(job.has_value()) << job.error().message;
  EXPECT_EQ(job->state, JobState::kAvailable);
  EXPECT_EQ(job->last_error, "lease expired (worker lost)");
}

TEST(MariadbSql, UniqueKeysAndDelays) {
  Fixture f;
  Sql sql(f.database);
  const auto first = sql.scalar("SELECT readpast_enqueue('r', '', NULL, NULL, NULL, 'daily')");
  EXPECT_EQ(sql.scalar("SELECT readpast_enqueue('r', '', NULL, NULL, NULL, 'daily')"), first);
  sql.scalar("SELECT readpast_enqueue('later', '', NULL, 3600000000, NULL, NULL)");
  EXPECT_TRUE(sql.query("CALL readpast_lease('later', 'w', 1, NULL)").empty());
}

TEST(MariadbSql, EnqueueInTheCallersTransactionCommitsOrRollsBackWithIt) {
  Fixture f;
  Sql sql(f.database);
  sql.query("START TRANSACTION");
  sql.scalar("SELECT readpast_enqueue('outbox', 'rolled back', NULL, NULL, NULL, NULL)");
  sql.query("ROLLBACK");
  sql.query("START TRANSACTION");
  sql.scalar("SELECT readpast_enqueue('outbox', 'committed', NULL, NULL, NULL, NULL)");
  // Not visible to others before the commit.
  auto before = f.queue.lease({.queue = "outbox", .worker_id = "w"});
  ASSERT_TRUE(before.has_value());
  EXPECT_TRUE(before->empty());
  sql.query("COMMIT");
  auto after = f.queue.lease({.queue = "outbox", .worker_id = "w", .max_jobs = 10});
  ASSERT_TRUE(after.has_value());
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ(after->front().payload, "committed");
}

TEST(MariadbSql, TwoSqlWorkersNeverTakeOneJob) {
  Fixture f;
  Sql a(f.database);
  Sql b(f.database);
  for (int i = 0; i < 10; ++i)
    a.scalar("SELECT readpast_enqueue('q', 'x', NULL, NULL, NULL, NULL)");
  a.query("START TRANSACTION");
  auto taken_a = a.query("CALL readpast_lease('q', 'a', 6, NULL)");  // its rows stay locked
  auto taken_b = b.query("CALL readpast_lease('q', 'b', 6, NULL)");  // skips them
  a.query("COMMIT");
  EXPECT_EQ(taken_a.size(), 6u);
  EXPECT_EQ(taken_b.size(), 4u);
  for (const auto& ra : taken_a) {
    for (const auto& rb : taken_b) EXPECT_NE(ra[0], rb[0]);
  }
}

TEST(MariadbSql, ProgressIsFencedByTheTokenAndRefusesWhatIsNotJson) {
  Fixture f;
  Sql sql(f.database);
  const std::string id = *sql.scalar("SELECT readpast_enqueue('p', 'x', NULL, NULL, NULL, NULL)");
  LeaseRequest request;
  request.queue = "p";
  request.worker_id = "w";
  auto leased = f.queue.lease(request);
  ASSERT_TRUE(leased.has_value() && leased->size() == 1u);
  const std::string token = leased->front().lease_token->hex();
  EXPECT_EQ(*sql.scalar("SELECT readpast_progress(" + id + ", '" + token + "', '{\"n\": 1}')"),
            "1");
  EXPECT_EQ(
      *sql.scalar("SELECT readpast_progress(" + id + ", 'ffffffffffffffffffffffffffffffff', '2')"),
      "0");
  EXPECT_THROW(sql.scalar("SELECT readpast_progress(" + id + ", '" + token + "', '{oops')"),
               std::runtime_error);
  EXPECT_THROW(sql.scalar("SELECT readpast_progress(" + id + ", '" + token + "', CONCAT('\"', " +
                          "REPEAT('x', 70000), '\"'))"),
               std::runtime_error);
  auto job = f.queue.get(std::stoll(id));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->progress, "{\"n\": 1}");
}

TEST(MariadbSql, FailAndRescueRecordTheErrorHistory) {
  Fixture f;
  Sql sql(f.database);
  const std::string id = *sql.scalar("SELECT readpast_enqueue('e', 'x', NULL, NULL, 2, NULL)");
  LeaseRequest request;
  request.queue = "e";
  request.worker_id = "sql-worker";
  auto leased = f.queue.lease(request);
  ASSERT_TRUE(leased.has_value() && leased->size() == 1u);
  const std::string token = leased->front().lease_token->hex();
  EXPECT_EQ(*sql.scalar("SELECT readpast_fail(" + id + ", '" + token + "', 'from sql', 0)"),
            "available");
  auto job = f.queue.get(std::stoll(id));
  ASSERT_TRUE(job.has_value());
  ASSERT_EQ(job->errors.size(), 1u);
  EXPECT_EQ(job->errors[0].error, "from sql");
  EXPECT_EQ(job->errors[0].worker, "sql-worker");
  EXPECT_EQ(job->errors[0].attempt, 1);
}

TEST(MariadbSql, EnqueueForOpensAUniqueWindowThatOutlivesItsJob) {
  Fixture f;
  Sql sql(f.database);
  const std::string first =
      *sql.scalar("SELECT readpast_enqueue_for('u', 'x', NULL, NULL, NULL, 'k', 3600000000)");
  LeaseRequest request;
  request.queue = "u";
  request.worker_id = "w";
  auto leased = f.queue.lease(request);
  ASSERT_TRUE(leased.has_value() && leased->size() == 1u);
  ASSERT_TRUE(f.queue.complete(leased->front().id, *leased->front().lease_token));
  EXPECT_EQ(*sql.scalar("SELECT readpast_enqueue_for('u', 'y', NULL, NULL, NULL, 'k', 1000000)"),
            first);
  EXPECT_EQ(*sql.scalar("SELECT readpast_enqueue('u', 'y', NULL, NULL, NULL, 'k')"), first);
  NewJob job;
  job.queue = "u";
  job.unique_key = "k";
  auto cxx = f.queue.enqueue(job);
  ASSERT_TRUE(cxx.has_value());
  EXPECT_FALSE(cxx->inserted);
  EXPECT_EQ(std::to_string(cxx->id), first);
  EXPECT_THROW(sql.scalar("SELECT readpast_enqueue_for('u', 'y', NULL, NULL, NULL, NULL, 5)"),
               std::runtime_error);
}

// Global limits through SQL (docs/mariadb.md): set and cleared by the procedures, seen by the
// C++ API, which obeys them; readpast_lease hands out nothing of a limited queue.
TEST(MariadbSql, SetLimitsAndClearLimitsProcedures) {
  Fixture f;
  NewJob job;
  job.queue = "lim";
  job.payload = "x";
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(f.queue.enqueue(job).has_value());
  Sql sql(f.database);
  sql.query("CALL readpast_set_limits('lim', 2, NULL, NULL)");
  sql.query("CALL readpast_set_limits('lim', NULL, 100, 1000000)");
  auto limits = f.queue.limits("lim");
  ASSERT_TRUE(limits.has_value()) << limits.error().message;
  EXPECT_EQ(limits->running, 2);
  ASSERT_TRUE(limits->rate);
  EXPECT_EQ(format_rate(*limits->rate), "100/1s");
  auto leased = f.queue.lease({.queue = "lim", .worker_id = "w", .max_jobs = 10});
  ASSERT_TRUE(leased.has_value()) << leased.error().message;
  EXPECT_EQ(leased->size(), 2u) << "the lease went past the running limit";
  EXPECT_TRUE(sql.query("CALL readpast_lease('lim', 'sql-worker', 10, 5000000)").empty())
      << "the SQL lease handed out jobs of a limited queue";
  EXPECT_THROW(sql.query("CALL readpast_set_limits('lim', 0, NULL, NULL)"), std::runtime_error);
  EXPECT_THROW(sql.query("CALL readpast_set_limits('lim', NULL, NULL, NULL)"), std::runtime_error);
  EXPECT_EQ(f.queue.limits("lim")->running, 2) << "a refused call changed the limits";
  sql.query("CALL readpast_clear_limits('lim')");
  EXPECT_TRUE(f.queue.limits("lim")->empty());
  EXPECT_EQ(sql.query("CALL readpast_lease('lim', 'sql-worker', 10, 5000000)").size(), 3u);
}

// readpast_enqueue_after (migration 8, docs/mariadb.md): the engines' rules of dependencies.
TEST(MariadbSql, EnqueueAfterWaitsForItsDependenciesAndRefusesBadOnes) {
  Fixture f;
  Sql sql(f.database);
  const std::string first =
      *sql.scalar("SELECT readpast_enqueue('build', 'compile', NULL, NULL, NULL, NULL)");
  const std::string waiting =
      *sql.scalar("SELECT readpast_enqueue_after('[" + first +
                  "]', 'deploy', 'ship', NULL, NULL, NULL, NULL, NULL, NULL)");
  EXPECT_EQ(*sql.scalar("SELECT state FROM readpast_jobs WHERE id = " + waiting), "waiting");
  for (const std::string& bad : {std::string("[999999]"), "[" + first + "," + first + "]",
                                 std::string("[0]"), std::string("not json")}) {
    EXPECT_THROW(sql.scalar("SELECT readpast_enqueue_after('" + bad +
                            "', 'deploy', 'x', NULL, NULL, NULL, NULL, NULL, NULL)"),
                 std::runtime_error)
        << bad;
  }
  EXPECT_EQ(*sql.scalar("SELECT COUNT(*) FROM readpast_jobs"), "2") << "a refused call enqueued";

  auto leased = f.queue.lease({.queue = "build", .worker_id = "w"});
  ASSERT_TRUE(leased.has_value()) << leased.error().message;
  ASSERT_EQ(leased->size(), 1u);
  ASSERT_TRUE(f.queue.complete(leased->front().id, *leased->front().lease_token));
  ASSERT_TRUE(f.queue.resolve_dependencies());
  EXPECT_EQ(*sql.scalar("SELECT state FROM readpast_jobs WHERE id = " + waiting), "available");
  const std::string at_once =
      *sql.scalar("SELECT readpast_enqueue_after('[" + first +
                  "]', 'deploy', 'again', NULL, NULL, NULL, NULL, NULL, NULL)");
  EXPECT_EQ(*sql.scalar("SELECT state FROM readpast_jobs WHERE id = " + at_once), "available");
}

// readpast_enqueue_after's groups: a member by p_group, a callback by p_after_group.
TEST(MariadbSql, EnqueueAfterJoinsAndWaitsForGroups) {
  Fixture f;
  Sql sql(f.database);
  const std::string member = *sql.scalar(
      "SELECT readpast_enqueue_after('[]', 'mail', 'm', NULL, NULL, NULL, NULL, 'batch', NULL)");
  const std::string callback = *sql.scalar(
      "SELECT readpast_enqueue_after('[]', 'report', 'r', NULL, NULL, NULL, NULL, NULL, 'batch')");
  EXPECT_EQ(*sql.scalar("SELECT state FROM readpast_jobs WHERE id = " + callback), "waiting");
  EXPECT_THROW(sql.scalar("SELECT readpast_enqueue_after('[]', 'report', 'r', NULL, NULL, NULL, "
                          "NULL, NULL, 'no-such')"),
               std::runtime_error);
  auto leased = f.queue.lease({.queue = "mail", .worker_id = "w"});
  ASSERT_TRUE(leased.has_value() && leased->size() == 1u);
  EXPECT_EQ(std::to_string(leased->front().id), member);
  ASSERT_TRUE(f.queue.complete(leased->front().id, *leased->front().lease_token));
  ASSERT_TRUE(f.queue.resolve_dependencies());
  EXPECT_EQ(*sql.scalar("SELECT state FROM readpast_jobs WHERE id = " + callback), "available");
}

}  // namespace
}  // namespace readpast
