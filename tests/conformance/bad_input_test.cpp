// Bad input gets a clear error (kInvalidArgument unless stated) and changes nothing.
#include <filesystem>
#include <fstream>

#include "conformance/queue_test.hpp"
#include "support/engines.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

const std::vector<std::string>& bad_queue_names() {
  using namespace std::string_literals;
  static const std::vector<std::string> kNames = {
      ""s,   "bad name"s,           "q;drop table jobs"s,    "'q'"s,         "\"q\""s, "--q"s,
      "q]"s, std::string(129, 'q'), std::string(10000, 'q'), "caf\xc3\xa9"s, "q\0x"s,  ".q"s,
      "q\n"s};
  return kNames;
}

TEST_P(QueueTest, RejectsInvalidQueueNamesInEveryCallThatTakesOne) {
  succeeded_job("q");
  dead_job("q");
  enqueue("q");
  Job running = lease_one("q");
  enqueue("q");
  const std::string before = snapshot();
  for (const std::string& name : bad_queue_names()) {
    SCOPED_TRACE("queue name '" + name.substr(0, 40) + "' (" + std::to_string(name.size()) +
                 " bytes)");
    EXPECT_ERROR_CODE(q().enqueue(new_job(name)), ErrorCode::kInvalidArgument);
    std::vector<NewJob> batch = {new_job(name)};
    EXPECT_ERROR_CODE(q().enqueue_batch(batch), ErrorCode::kInvalidArgument);
    EXPECT_ERROR_CODE(q().lease(LeaseRequest{name, "w", 1, std::chrono::seconds(30)}),
                      ErrorCode::kInvalidArgument);
    EXPECT_ERROR_CODE(q().wait_for_work(name, std::chrono::milliseconds(1)),
                      ErrorCode::kInvalidArgument);
    EXPECT_ERROR_CODE(q().rescue_expired(name), ErrorCode::kInvalidArgument);
    EXPECT_ERROR_CODE(q().retry_all(name, JobState::kDead), ErrorCode::kInvalidArgument);
    PurgeRequest purge;
    purge.queue = name;
    purge.state = JobState::kSucceeded;
    EXPECT_ERROR_CODE(q().purge(purge), ErrorCode::kInvalidArgument);
    EXPECT_ERROR_CODE(q().apply_retention(name), ErrorCode::kInvalidArgument);
    EXPECT_ERROR_CODE(q().stats(std::string_view(name)), ErrorCode::kInvalidArgument);
    ListRequest list;
    list.queue = name;
    EXPECT_ERROR_CODE(q().list(list), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(snapshot(), before);
  ok(q().complete(running.id, *running.lease_token));
}

TEST_P(QueueTest, RejectsAPayloadOverMaxPayloadBytesAndAcceptsOneAtTheLimit) {
  QueueOptions options;
  options.max_payload_bytes = 1024;
  open(options);
  enqueue("q");
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().enqueue(new_job("q", std::string(1025, 'x'))), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().enqueue(new_job("q", std::string(1 << 20, 'x'))),
                    ErrorCode::kInvalidArgument);
  std::vector<NewJob> batch = {new_job("q", "small"), new_job("q", std::string(1025, 'x'))};
  EXPECT_ERROR_CODE(q().enqueue_batch(batch), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
  JobId at_limit = enqueue("q", std::string(1024, 'y'));
  EXPECT_EQ(get(at_limit).payload, std::string(1024, 'y'));
}

TEST_P(QueueTest, DefaultPayloadLimitIsSixteenMebibytes) {
  EXPECT_EQ(q().options().max_payload_bytes, std::size_t{16} << 20);
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().enqueue(new_job("q", std::string((std::size_t{16} << 20) + 1, 'x'))),
                    ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RejectsMaxAttemptsBelowOne) {
  enqueue("q");
  const std::string before = snapshot();
  for (int max_attempts : {0, -1, -1000}) {
    auto spec = new_job("q");
    spec.max_attempts = max_attempts;
    EXPECT_ERROR_CODE(q().enqueue(spec), ErrorCode::kInvalidArgument) << max_attempts;
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RejectsDelayAndRunAtTogether) {
  auto spec = new_job("q");
  spec.delay = std::chrono::seconds(5);
  spec.run_at = now() + std::chrono::seconds(5);
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().enqueue(spec), ErrorCode::kInvalidArgument);
  std::vector<NewJob> batch = {new_job("q"), spec};
  EXPECT_ERROR_CODE(q().enqueue_batch(batch), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RejectsNegativeDurations) {
  JobId id = enqueue("q");
  Job leased = lease_one("q");
  enqueue("q");
  const std::string before = snapshot();
  const Duration negative = -std::chrono::seconds(1);

  auto delayed = new_job("q");
  delayed.delay = negative;
  EXPECT_ERROR_CODE(q().enqueue(delayed), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().lease(LeaseRequest{"q", "w", 1, negative}), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().lease(LeaseRequest{"q", "w", 1, Duration::zero()}),
                    ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().extend(id, *leased.lease_token, negative), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().extend_batch(std::vector<LeasedRef>{{id, *leased.lease_token}}, negative),
                    ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().release(id, *leased.lease_token, negative), ErrorCode::kInvalidArgument);
  FailOptions fail_options;
  fail_options.retry_after = negative;
  EXPECT_ERROR_CODE(q().fail(id, *leased.lease_token, "x", fail_options),
                    ErrorCode::kInvalidArgument);
  FailOptions bad_backoff;
  bad_backoff.backoff = Backoff{negative, std::chrono::hours(1), 0.0};
  EXPECT_ERROR_CODE(q().fail(id, *leased.lease_token, "x", bad_backoff),
                    ErrorCode::kInvalidArgument);
  PurgeRequest purge;
  purge.queue = "q";
  purge.state = JobState::kSucceeded;
  purge.older_than = negative;
  EXPECT_ERROR_CODE(q().purge(purge), ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().wait_for_work("q", negative), ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
  // The lease survived all of that.
  ok(q().complete(id, *leased.lease_token));
}

std::string describe(const Error& error) {
  return std::string(to_string(error.code)) + ": " + error.message;
}

// A duration too large for the clock arithmetic must be refused, or honoured as "far in
// the future" — never wrap around into the past.
TEST_P(QueueTest, HugeDurationsAreRefusedOrHonouredButNeverWrapAround) {
  const TimePoint far = now() + std::chrono::hours(24 * 365);
  // true: refused as bad input. false: accepted, and the test checks what it did.
  // Any other error fails the test.
  auto refused = [](const auto& result, const char* what) {
    if (result.has_value()) return false;
    EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument)
        << what << ": " << describe(result.error());
    return true;
  };
  for (Duration huge :
       {Duration::max(), Duration::max() / 2, Duration(std::chrono::hours(24 * 365 * 300))}) {
    SCOPED_TRACE("duration of " + std::to_string(huge.count()) + " us");
    auto delayed = new_job("delayed");
    delayed.delay = huge;
    auto enqueued = q().enqueue(delayed);
    if (!refused(enqueued, "enqueue with delay")) {
      TimePoint run_at = get(enqueued->id).run_at;
      EXPECT_TRUE(run_at > far) << "delay wrapped around: " << format_time(run_at);
      EXPECT_TRUE(lease("delayed", 1).empty()) << "a job delayed for ages was leased";
    }

    for (bool via_backoff : {false, true}) {
      JobId failing = enqueue("failing");
      Job job = lease_one("failing");
      FailOptions options;
      if (via_backoff) {
        options.backoff = Backoff{huge, huge, 0.0};
      } else {
        options.retry_after = huge;
      }
      auto failed = q().fail(failing, *job.lease_token, "x", options);
      if (!refused(failed, via_backoff ? "fail with a huge backoff" : "fail with retry_after")) {
        TimePoint run_at = get(failing).run_at;
        EXPECT_TRUE(run_at > far) << "retry time wrapped around: " << format_time(run_at);
        EXPECT_TRUE(lease("failing", 1).empty()) << "a job retrying in ages was leased";
      } else {
        ok(q().complete(failing, *job.lease_token));
      }
    }

    JobId id = enqueue("q");
    auto leased = q().lease(LeaseRequest{"q", "w", 1, huge});
    if (!refused(leased, "lease")) {
      ASSERT_EQ(leased->size(), 1u);
      TimePoint expiry = *leased->front().lease_expires_at;
      EXPECT_TRUE(expiry > far) << "lease expiry wrapped around: " << format_time(expiry);
      EXPECT_EQ(ok(q().rescue_expired("q")), 0) << "a lease for ages was rescued at once";
      ok(q().complete(id, *leased->front().lease_token));
      continue;
    }
    Job job = lease_one("q");
    auto extended = q().extend(id, *job.lease_token, huge);
    if (!refused(extended, "extend")) {
      TimePoint expiry = *get(id).lease_expires_at;
      EXPECT_TRUE(expiry > far) << "extend wrapped around: " << format_time(expiry);
      EXPECT_EQ(ok(q().rescue_expired("q")), 0);
    }
    auto released = q().release(id, *job.lease_token, huge);
    if (!refused(released, "release")) {
      TimePoint run_at = get(id).run_at;
      EXPECT_TRUE(run_at > far) << "release delay wrapped around: " << format_time(run_at);
    } else {
      ok(q().complete(id, *job.lease_token));
    }
  }
}

// Unique keys and worker ids are text to the API; bytes a database's text type cannot hold
// (NUL, invalid UTF-8) must be refused as bad input or stored (a unique key faithfully) —
// never a kInternal from deep inside the database.
TEST_P(QueueTest, TextWithNulOrInvalidUtf8IsStoredOrRefusedClearly) {
  using namespace std::string_literals;
  for (const std::string& text : {"nul\0inside"s, "caf\xe9"s, "\xe2\x82"s}) {
    auto spec = new_job("q");
    spec.unique_key = text;
    auto enqueued = q().enqueue(spec);
    if (enqueued) {
      EXPECT_EQ(get(enqueued->id).unique_key, std::optional<std::string>(text));
    } else {
      EXPECT_EQ(enqueued.error().code, ErrorCode::kInvalidArgument) << describe(enqueued.error());
    }
    JobId id = enqueue("w");
    auto leased = q().lease(LeaseRequest{"w", text, 1, std::chrono::seconds(30)});
    if (leased) {
      ASSERT_EQ(leased->size(), 1u);
      // leased_by is for display: an engine may store it as given or made valid UTF-8.
      auto leased_by = get(id).leased_by;
      ASSERT_TRUE(leased_by.has_value());
      EXPECT_GE(leased_by->size(), 2u);
      ok(q().complete(id, *leased->front().lease_token));
    } else {
      EXPECT_EQ(leased.error().code, ErrorCode::kInvalidArgument) << describe(leased.error());
      ok(q().cancel(std::vector<JobId>{id}));
    }
  }
}

TEST_P(QueueTest, ExtremeRunAtIsStoredOrRefusedClearly) {
  for (TimePoint run_at :
       {TimePoint::max(), TimePoint::min(),
        TimePoint(std::chrono::sys_days(std::chrono::year(9999) / std::chrono::December / 31)),
        TimePoint(std::chrono::sys_days(std::chrono::year(1) / std::chrono::January / 1))}) {
    auto spec = new_job("q");
    spec.run_at = run_at;
    auto enqueued = q().enqueue(spec);
    if (enqueued) {
      EXPECT_EQ(format_time(get(enqueued->id).run_at), format_time(run_at));
    } else {
      EXPECT_EQ(enqueued.error().code, ErrorCode::kInvalidArgument)
          << format_time(run_at) << ": " << describe(enqueued.error());
    }
  }
}

TEST_P(QueueTest, RejectsMaxJobsBelowOne) {
  enqueue("q");
  const std::string before = snapshot();
  EXPECT_ERROR_CODE(q().lease(LeaseRequest{"q", "w", 0, std::chrono::seconds(30)}),
                    ErrorCode::kInvalidArgument);
  EXPECT_ERROR_CODE(q().lease(LeaseRequest{"q", "w", -3, std::chrono::seconds(30)}),
                    ErrorCode::kInvalidArgument);
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RejectsRetryAllOfAStateOtherThanDeadOrCancelled) {
  dead_job("q");
  enqueue("q");
  const std::string before = snapshot();
  for (JobState state : {JobState::kAvailable, JobState::kRunning, JobState::kSucceeded}) {
    EXPECT_ERROR_CODE(q().retry_all("q", state), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RejectsAnInvalidBackoffInTheOptions) {
  QueueOptions options;
  options.init_schema = true;
  options.backoff.jitter = 2.0;
  EXPECT_ERROR_CODE(Queue::open(url(), options), ErrorCode::kInvalidArgument);
  QueueOptions per_queue;
  per_queue.init_schema = true;
  per_queue.queue_backoff["q"] = Backoff{-std::chrono::seconds(1), std::chrono::hours(1), 0.0};
  EXPECT_ERROR_CODE(Queue::open(url(), per_queue), ErrorCode::kInvalidArgument);
  QueueOptions bad_name;
  bad_name.init_schema = true;
  bad_name.queue_backoff["bad name"] = Backoff{};
  EXPECT_ERROR_CODE(Queue::open(url(), bad_name), ErrorCode::kInvalidArgument);
}

TEST_P(QueueTest, ABatchWithOneBadJobInsertsNone) {
  enqueue("q");
  const std::string before = snapshot();
  auto too_many_tries = new_job("q");
  too_many_tries.max_attempts = 0;
  std::vector<std::vector<NewJob>> batches = {
      {new_job("q", "good"), new_job("bad name"), new_job("q", "good too")},
      {new_job("q", "good"), too_many_tries},
      {new_job("q", "good"), new_job("")},
  };
  for (const auto& batch : batches) {
    EXPECT_ERROR_CODE(q().enqueue_batch(batch), ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_P(QueueTest, RejectsAMalformedUrl) {
  for (std::string_view url : {"", "nonsense", "sqlite:", "sqlite:x.db?bogus=1", "mssql://u@h/db",
                               "http://example.com/db"}) {
    QueueOptions options;
    options.init_schema = true;
    EXPECT_ERROR_CODE(Queue::open(url, options), ErrorCode::kInvalidArgument) << url;
  }
}

// The one place the suite knows an engine's URL form: to make a database without a schema
// and to name a file that is not there. Other engines' fresh URLs (fresh_url, not the url()
// of the test, which may have its schema already) have no schema.
std::optional<std::string> sqlite_path(const std::string& url) {
  if (url.starts_with("sqlite:")) return url.substr(std::string_view("sqlite:").size());
  return std::nullopt;
}

TEST_P(QueueTest, OpeningAFreshDatabaseWithoutInitSchemaFails) {
  const std::string fresh = engine_named(GetParam()).fresh_url();
  auto opened = Queue::open(fresh);
  ASSERT_FALSE(opened.has_value()) << "opened a database that has no schema";
  if (auto path = sqlite_path(fresh)) {
    // A SQLite file that does not exist is not created behind the user's back.
    EXPECT_EQ(opened.error().code, ErrorCode::kNotFound) << opened.error().message;
    EXPECT_FALSE(std::filesystem::exists(*path)) << "open created " << *path;
  } else {
    EXPECT_EQ(opened.error().code, ErrorCode::kSchema) << opened.error().message;
  }
}

TEST_P(QueueTest, OpeningADatabaseWithoutTheSchemaIsASchemaError) {
  const std::string fresh = engine_named(GetParam()).fresh_url();
  if (auto path = sqlite_path(fresh)) {
    std::ofstream create(*path);  // an empty file is an empty SQLite database
  }
  auto opened = Queue::open(fresh);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, ErrorCode::kSchema) << opened.error().message;
  // init_schema then makes it usable.
  QueueOptions options;
  options.init_schema = true;
  auto fixed = Queue::open(fresh, options);
  ASSERT_TRUE(fixed.has_value()) << fixed.error().message;
  auto id = fixed->enqueue(new_job("q"));
  EXPECT_TRUE(id.has_value());
  // And now a plain open works too.
  EXPECT_TRUE(Queue::open(fresh).has_value());
}

TEST_P(QueueTest, OpeningAMissingDatabaseFileIsNotFound) {
  if (!sqlite_path(url())) GTEST_SKIP() << "only file-based engines have missing files";
  TempDir dir;
  std::string missing = "sqlite:" + dir.file("no/such/dir/x.db");
  auto opened = Queue::open(missing);
  ASSERT_FALSE(opened.has_value());
  EXPECT_EQ(opened.error().code, ErrorCode::kNotFound) << opened.error().message;
  QueueOptions options;
  options.init_schema = true;
  auto created = Queue::open(missing, options);
  EXPECT_FALSE(created.has_value()) << "created a database in a directory that does not exist";
}

}  // namespace
}  // namespace readpast::test
