// Faults: the server restarts (`pg_ctl stop -m immediate`, which clients cannot tell from
// a crash) under a Queue. Operations fail with kUnavailable while it is down and succeed
// once it is back, without reopening anything; the outage is logged once, not per attempt;
// a complete or fail re-sent after an unknown outcome takes effect at most once. And
// passwords never appear in any error.
#include <future>

#include "pg_test_util.hpp"

namespace readpast::test {
namespace {

using FaultTest = PostgresTest;

// Retries `op` while it reports kUnavailable, for up to `patience`.
template <class Op>
auto retry_while_unavailable(Op op, std::chrono::seconds patience = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  auto result = op();
  while (!result && result.error().is_unavailable() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    result = op();
  }
  return result;
}

TEST_F(FaultTest, OperationsFailAsUnavailableWhileTheServerIsDownThenSucceed) {
  LogCapture log;
  QueueOptions options;
  options.logger = log.logger();
  Queue queue = open(options);
  must(queue.enqueue(job("q", "before")));

  server().stop_immediate();
  for (int i = 0; i < 20; ++i) {
    auto enqueued = queue.enqueue(job("q", "while down"));
    ASSERT_FALSE(enqueued);
    EXPECT_EQ(enqueued.error().code, ErrorCode::kUnavailable) << enqueued.error().message;
    auto leased = queue.lease({.queue = "q", .worker_id = "w"});
    ASSERT_FALSE(leased);
    EXPECT_EQ(leased.error().code, ErrorCode::kUnavailable) << leased.error().message;
    EXPECT_EQ(leased.error().message.find('\n'), std::string::npos) << "one line";
    std::this_thread::sleep_for(20ms);
  }
  server().start();

  auto after = retry_while_unavailable([&] { return queue.enqueue(job("q", "after")); });
  ASSERT_TRUE(after) << after.error().message;
  auto jobs = must(queue.list(in_queue("q")));
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].payload, "before");
  EXPECT_EQ(jobs[1].payload, "after");

  // Forty failed calls, one line about the outage and one about the recovery.
  EXPECT_EQ(log.count("reconnecting with backoff"), 1) << log.all();
  EXPECT_EQ(log.count("reconnected to PostgreSQL"), 1) << log.all();
}

TEST_F(FaultTest, TheFirstCallAfterARestartSucceeds) {
  // Idle connections that the restart closed are noticed and replaced before use.
  Queue queue = open();
  must(queue.enqueue(job("q")));
  server().restart_immediate();
  auto enqueued = queue.enqueue(job("q"));
  EXPECT_TRUE(enqueued) << enqueued.error().message;
}

TEST_F(FaultTest, ACompleteResentAfterARestartIsAcceptedAtMostOnce) {
  Queue queue = open();
  const JobId id = must(queue.enqueue(job("q"))).id;
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  const LeaseToken token = *leased[0].lease_token;

  server().restart_immediate();
  // The worker does not know whether its complete got through (here: it did not even
  // reach the server, or did), so it sends it again until it hears back.
  auto first = retry_while_unavailable([&] { return queue.complete(id, token); });
  ASSERT_TRUE(first) << first.error().message;
  // A second delivery of the same complete (say, the first answer was lost) changes
  // nothing and says so.
  auto resent = queue.complete(id, token);
  ASSERT_FALSE(resent);
  EXPECT_TRUE(resent.error().is_lease_lost());
  Job done = must(queue.get(id));
  EXPECT_EQ(done.state, JobState::kSucceeded);
  EXPECT_EQ(done.attempts, 1);
}

TEST_F(FaultTest, AFailResentAfterARestartSpendsOneAttemptOnly) {
  Queue queue = open();
  const JobId id = must(queue.enqueue(job("q"))).id;
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w"}));
  ASSERT_EQ(leased.size(), 1u);
  const LeaseToken token = *leased[0].lease_token;
  server().restart_immediate();
  FailOptions later;
  later.retry_after = 1h;
  auto first = retry_while_unavailable([&] { return queue.fail(id, token, "boom", later); });
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, FailOutcome::kRetrying);
  auto resent = queue.fail(id, token, "boom", later);
  ASSERT_FALSE(resent);
  EXPECT_TRUE(resent.error().is_lease_lost());
  Job job_now = must(queue.get(id));
  EXPECT_EQ(job_now.state, JobState::kAvailable);
  EXPECT_EQ(job_now.attempts, 1);
}

TEST_F(FaultTest, ACompleteInFlightDuringTheCrashIsResolvedByResending) {
  // Many completes race a crash; whatever each first attempt did, re-sending until an
  // answer comes leaves every job succeeded exactly once and none lost.
  Queue queue = open();
  std::vector<NewJob> jobs(200, job("q"));
  must(queue.enqueue_batch(jobs));
  auto leased = must(queue.lease({.queue = "q", .worker_id = "w", .max_jobs = 200}));
  ASSERT_EQ(leased.size(), 200u);
  auto completer = std::async(std::launch::async, [&] {
    int accepted = 0, lost = 0;
    for (const Job& j : leased) {
      bool answered = false;
      bool sent_before = false;
      while (!answered) {
        auto done = queue.complete(j.id, *j.lease_token);
        if (done) {
          ++accepted;
          answered = true;
        } else if (done.error().is_lease_lost()) {
          // Only possible when an earlier attempt committed but its answer was lost.
          if (!sent_before) ADD_FAILURE() << "job " << j.id << " lost its lease unexpectedly";
          ++lost;
          answered = true;
        } else {
          EXPECT_TRUE(done.error().is_unavailable()) << done.error().message;
          sent_before = true;
          std::this_thread::sleep_for(20ms);
        }
      }
    }
    return std::pair(accepted, lost);
  });
  std::this_thread::sleep_for(5ms);
  server().restart_immediate();
  auto [accepted, lost] = completer.get();
  EXPECT_EQ(accepted + lost, 200);
  auto stats = must(queue.stats("q"));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].succeeded, 200);
  EXPECT_EQ(stats[0].running, 0);
  for (const Job& j : must(queue.list(in_queue("q", 1000)))) EXPECT_EQ(j.attempts, 1);
}

TEST_F(FaultTest, TheWakeUpListenerComesBackAfterARestart) {
  LogCapture log;
  QueueOptions options;
  options.logger = log.logger();
  Queue worker = open(options);
  EXPECT_FALSE(must(worker.wait_for_work("q", 100ms)));
  server().restart_immediate();
  // Give the listener time to notice and reconnect (its backoff starts at 100 ms).
  ASSERT_TRUE(eventually([&] { return log.count("wake-up listener reconnected") == 1; }))
      << log.all();
  EXPECT_TRUE(retry_while_unavailable([&] { return worker.wait_for_work("q", 100ms); }));
  auto waiter =
      std::async(std::launch::async, [&] { return must(worker.wait_for_work("q", 20s)); });
  std::this_thread::sleep_for(200ms);
  const auto enqueued_at = std::chrono::steady_clock::now();
  sql().scalar("SELECT readpast.enqueue('q', 'x')");
  EXPECT_TRUE(waiter.get());
  EXPECT_LT(std::chrono::steady_clock::now() - enqueued_at, 3s) << "woken, not timed out";
}

class PasswordTest : public FaultTest {
 protected:
  static constexpr const char* kSecret = "S3cret-Pa55word";
  void SetUp() override {
    FaultTest::SetUp();
    // Only members of readpast_password_auth must give their password (postgres_server.hpp).
    auto db = sql();
    db.exec(
        "DO $$ BEGIN CREATE ROLE pw_user LOGIN PASSWORD 'S3cret-Pa55word' "
        "IN ROLE readpast_password_auth; EXCEPTION WHEN duplicate_object THEN NULL; END $$");
    db.exec("GRANT ALL ON SCHEMA readpast TO pw_user");
    db.exec("GRANT ALL ON ALL TABLES IN SCHEMA readpast TO pw_user");
    db.exec("GRANT ALL ON ALL SEQUENCES IN SCHEMA readpast TO pw_user");
    database_ = url().substr(url().rfind('/') + 1);
  }
  std::string database_;

  void expect_no_secret(const std::string& url, ErrorCode expected) {
    auto opened = Queue::open(url);
    ASSERT_FALSE(opened) << "opened " << url;
    EXPECT_EQ(opened.error().code, expected) << opened.error().message;
    EXPECT_EQ(opened.error().message.find(kSecret), std::string::npos) << opened.error().message;
    EXPECT_EQ(opened.error().message.find("Pa55"), std::string::npos) << opened.error().message;
    EXPECT_EQ(opened.error().message.find('\n'), std::string::npos) << opened.error().message;
    std::printf("[ message  ] %s\n", opened.error().message.c_str());
  }
};

TEST_F(PasswordTest, TheRightPasswordWorks) {
  const std::string good = "postgresql://pw_user:" + std::string(kSecret) +
                           "@127.0.0.1:" + std::to_string(server().port()) + "/" + database_;
  Queue queue = must(Queue::open(good));
  must(queue.enqueue(job("q")));
}

TEST_F(PasswordTest, AWrongPortNeverShowsThePassword) {
  const int closed_port = server().port() == 1 ? 2 : 1;
  expect_no_secret("postgresql://pw_user:" + std::string(kSecret) +
                       "@127.0.0.1:" + std::to_string(closed_port) + "/" + database_,
                   ErrorCode::kUnavailable);
  expect_no_secret("host=127.0.0.1 port=" + std::to_string(closed_port) +
                       " user=pw_user password=" + kSecret + " dbname=" + database_,
                   ErrorCode::kUnavailable);
}

TEST_F(PasswordTest, AWrongHostNeverShowsThePassword) {
  expect_no_secret(
      "postgresql://pw_user:" + std::string(kSecret) + "@no-such-host.invalid:5432/" + database_,
      ErrorCode::kUnavailable);
}

TEST_F(PasswordTest, AWrongPasswordNeverShowsItself) {
  expect_no_secret("postgresql://pw_user:Wrong-Pa55word@127.0.0.1:" +
                       std::to_string(server().port()) + "/" + database_,
                   ErrorCode::kUnavailable);
}

TEST_F(PasswordTest, AMalformedUrlNeverShowsThePassword) {
  expect_no_secret("postgresql://pw_user:" + std::string(kSecret) + "@127.0.0.1:notaport/db",
                   ErrorCode::kInvalidArgument);
  // libpq checks option values like sslmode only when it connects.
  expect_no_secret("postgresql://pw_user:S3cret%2FPa55word@127.0.0.1:1/db?sslmode=bogus",
                   ErrorCode::kUnavailable);
  expect_no_secret("host=127.0.0.1 password=" + std::string(kSecret) + " bogus_option=1",
                   ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace readpast::test
