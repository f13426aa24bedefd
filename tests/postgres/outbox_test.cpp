// The transactional outbox: a job enqueued inside the application's transaction exists if
// and only if that transaction commits — from the C++ API (readpast/postgres.hpp) on a
// connection the caller owns, and from SQL with readpast.enqueue().
#include <future>

#include "pg_test_util.hpp"
#include "readpast/postgres.hpp"

namespace readpast::test {
namespace {

class OutboxTest : public PostgresTest {
 protected:
  void SetUp() override {
    PostgresTest::SetUp();
    app_ = std::make_unique<SqlConnection>(url());
    app_->exec("CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL)");
  }
  SqlConnection& app() { return *app_; }
  std::int64_t count(const std::string& table) {
    return std::stoll(app().scalar("SELECT count(*) FROM " + table));
  }

 private:
  std::unique_ptr<SqlConnection> app_;
};

TEST_F(OutboxTest, RolledBackTransactionLeavesNoJobFromTheCppApi) {
  app().exec("BEGIN");
  app().exec("INSERT INTO orders (item) VALUES ('book')");
  auto enqueued = postgres::enqueue(app().get(), job("emails", R"({"order": "book"})"));
  ASSERT_TRUE(enqueued) << enqueued.error().message;
  EXPECT_TRUE(enqueued->inserted);
  app().exec("ROLLBACK");

  EXPECT_EQ(count("orders"), 0);
  EXPECT_EQ(count("readpast.jobs"), 0);
  Queue queue = open();
  EXPECT_TRUE(must(queue.stats()).empty());
  EXPECT_TRUE(must(queue.lease({.queue = "emails", .worker_id = "w"})).empty());
}

TEST_F(OutboxTest, CommittedTransactionLeavesExactlyOneJobFromTheCppApi) {
  app().exec("BEGIN");
  app().exec("INSERT INTO orders (item) VALUES ('book')");
  auto enqueued = must(postgres::enqueue(app().get(), job("emails", R"({"order": "book"})")));
  app().exec("COMMIT");

  EXPECT_EQ(count("orders"), 1);
  Queue queue = open();
  auto jobs = must(queue.list(in_queue("emails")));
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].id, enqueued.id);
  EXPECT_EQ(jobs[0].payload, R"({"order": "book"})");
  auto leased = must(queue.lease({.queue = "emails", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  must(queue.complete(leased[0].id, *leased[0].lease_token));
}

TEST_F(OutboxTest, RolledBackTransactionLeavesNoJobFromSql) {
  app().exec("BEGIN");
  app().exec("INSERT INTO orders (item) VALUES ('book')");
  app().scalar("SELECT readpast.enqueue('emails', '{\"order\": \"book\"}')");
  app().exec("ROLLBACK");
  EXPECT_EQ(count("orders"), 0);
  EXPECT_EQ(count("readpast.jobs"), 0);
}

TEST_F(OutboxTest, CommittedTransactionLeavesExactlyOneJobFromSql) {
  app().exec("BEGIN");
  app().exec("INSERT INTO orders (item) VALUES ('book')");
  const auto id = std::stoll(app().scalar("SELECT readpast.enqueue('emails', 'book')"));
  app().exec("COMMIT");
  EXPECT_EQ(count("orders"), 1);
  EXPECT_EQ(count("readpast.jobs"), 1);
  Queue queue = open();
  EXPECT_EQ(must(queue.get(id)).payload, "book");
}

TEST_F(OutboxTest, JobIsInvisibleToWorkersUntilTheTransactionCommits) {
  Queue queue = open();
  app().exec("BEGIN");
  must(postgres::enqueue(app().get(), job("emails")));
  EXPECT_TRUE(must(queue.lease({.queue = "emails", .worker_id = "w"})).empty());
  app().exec("COMMIT");
  EXPECT_EQ(must(queue.lease({.queue = "emails", .worker_id = "w"})).size(), 1u);
}

TEST_F(OutboxTest, CommitWakesAWaitingWorker) {
  Queue queue = open();
  EXPECT_FALSE(must(queue.wait_for_work("emails", 200ms)));  // listening from here on
  app().exec("BEGIN");
  must(postgres::enqueue(app().get(), job("emails")));
  auto waiter = std::async(std::launch::async, [&] {
    const auto started = std::chrono::steady_clock::now();
    bool woken = must(queue.wait_for_work("emails", 10s));
    return std::pair(woken, std::chrono::steady_clock::now() - started);
  });
  std::this_thread::sleep_for(300ms);  // not woken by the uncommitted enqueue
  app().exec("COMMIT");
  auto [woken, after] = waiter.get();
  EXPECT_TRUE(woken);
  EXPECT_GE(after, 250ms);
  EXPECT_LT(after, 3s) << "woken by the commit, not the timeout";
}

TEST_F(OutboxTest, BatchIsAllOrNothingWithTheTransaction) {
  std::vector<NewJob> jobs{job("emails", "a"), job("emails", "b"), job("sms", "c")};
  jobs[1].unique_key = "k";
  jobs.push_back(job("emails", "d"));
  jobs.back().unique_key = "k";  // the same key again: returns the first one's id

  app().exec("BEGIN");
  auto results = must(postgres::enqueue_batch(app().get(), jobs));
  ASSERT_EQ(results.size(), 4u);
  EXPECT_TRUE(results[0].inserted && results[1].inserted && results[2].inserted);
  EXPECT_FALSE(results[3].inserted);
  EXPECT_EQ(results[3].id, results[1].id);
  EXPECT_LT(results[0].id, results[1].id);
  EXPECT_LT(results[1].id, results[2].id);
  app().exec("ROLLBACK");
  EXPECT_EQ(count("readpast.jobs"), 0);

  app().exec("BEGIN");
  results = must(postgres::enqueue_batch(app().get(), jobs));
  app().exec("COMMIT");
  EXPECT_EQ(count("readpast.jobs"), 3);
}

TEST_F(OutboxTest, ValidatesLikeQueueBeforeSendingAnything) {
  app().exec("BEGIN");
  auto bad_name = postgres::enqueue(app().get(), job("no spaces"));
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(bad_name.error().code, ErrorCode::kInvalidArgument);

  postgres::OutboxOptions small;
  small.max_payload_bytes = 4;
  auto too_big = postgres::enqueue(app().get(), job("emails", "12345"), small);
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().code, ErrorCode::kInvalidArgument);

  NewJob both = job("emails");
  both.delay = 1s;
  both.run_at = TimePoint{};
  EXPECT_FALSE(postgres::enqueue(app().get(), both));

  postgres::OutboxOptions bad_schema;
  bad_schema.schema = "x\"; DROP TABLE orders; --";
  auto injected = postgres::enqueue(app().get(), job("emails"), bad_schema);
  ASSERT_FALSE(injected);
  EXPECT_EQ(injected.error().code, ErrorCode::kInvalidArgument);

  // Nothing reached the server: the caller's transaction is still usable.
  EXPECT_EQ(PQtransactionStatus(app().get()), PQTRANS_INTRANS);
  app().exec("INSERT INTO orders (item) VALUES ('still fine')");
  app().exec("COMMIT");
  EXPECT_EQ(count("orders"), 1);
}

TEST_F(OutboxTest, RefusesAnAbortedTransaction) {
  app().exec("BEGIN");
  EXPECT_ANY_THROW(app().exec("SELECT 1/0"));
  auto result = postgres::enqueue(app().get(), job("emails"));
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  app().exec("ROLLBACK");
}

TEST_F(OutboxTest, OutsideATransactionTheEnqueueCommitsByItself) {
  NewJob keyed = job("emails");
  keyed.unique_key = "once";
  auto first = must(postgres::enqueue(app().get(), keyed));
  auto second = must(postgres::enqueue(app().get(), keyed));
  EXPECT_TRUE(first.inserted);
  EXPECT_FALSE(second.inserted);
  EXPECT_EQ(first.id, second.id);
  EXPECT_EQ(PQtransactionStatus(app().get()), PQTRANS_IDLE);
  EXPECT_EQ(count("readpast.jobs"), 1);
}

TEST_F(OutboxTest, UsesTheSchemaItIsGiven) {
  const std::string tenant_url = url() + "?schema=tenant_a";
  QueueOptions options;
  options.init_schema = true;
  Queue tenant = must(Queue::open(tenant_url, options));
  postgres::OutboxOptions outbox;
  outbox.schema = "tenant_a";
  auto enqueued = must(postgres::enqueue(app().get(), job("emails"), outbox));
  EXPECT_EQ(must(tenant.get(enqueued.id)).queue, "emails");
  EXPECT_EQ(count("readpast.jobs"), 0);
  EXPECT_EQ(count("tenant_a.jobs"), 1);
}

TEST_F(OutboxTest, LeavesTheCallersPreparedStatementsAlone) {
  // The outbox does not prepare statements on a connection it does not own.
  app().exec("PREPARE readpast_enqueue AS SELECT 42");
  must(postgres::enqueue(app().get(), job("emails")));
  EXPECT_EQ(app().scalar("EXECUTE readpast_enqueue"), "42");
}

}  // namespace
}  // namespace readpast::test
