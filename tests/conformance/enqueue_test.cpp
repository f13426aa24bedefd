// enqueue and enqueue_batch: ids, columns, unique keys, payload bytes.
#include <algorithm>
#include <atomic>
#include <limits>
#include <set>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

TEST_P(QueueTest, EnqueueReturnsIncreasingIds) {
  JobId previous = 0;
  for (int i = 0; i < 20; ++i) {
    JobId id = enqueue(i % 2 ? "a" : "b");
    EXPECT_GT(id, previous);
    previous = id;
  }
}

TEST_P(QueueTest, IdsAreNeverReusedAfterTheNewestJobIsDeleted) {
  // A job id may serve as an idempotency key, so a deleted job's id must not come back.
  QueueOptions options;
  options.retention.succeeded = Duration::zero();  // complete deletes the row
  open(options);
  enqueue("q");
  JobId newest = enqueue("q");
  Job first = lease_one("q");
  Job second = lease_one("q");
  ASSERT_EQ(second.id, newest);
  ok(q().complete(first.id, *first.lease_token));
  ok(q().complete(second.id, *second.lease_token));
  EXPECT_GT(enqueue("q"), newest) << "the id of a deleted job was handed out again";

  JobId dead = dead_job("q");
  PurgeRequest purge;
  purge.queue = "q";
  purge.state = JobState::kDead;
  EXPECT_EQ(ok(q().purge(purge)), 1);
  EXPECT_GT(enqueue("q"), dead) << "the id of a purged job was handed out again";
}

TEST_P(QueueTest, EnqueueSetsEveryColumnAsDocumented) {
  TimePoint before = now();
  auto enqueued = ok(q().enqueue(new_job("mail", "{\"to\":\"x\"}")));
  TimePoint after = now();
  EXPECT_TRUE(enqueued.inserted);
  Job job = get(enqueued.id);
  EXPECT_EQ(job.id, enqueued.id);
  EXPECT_EQ(job.queue, "mail");
  EXPECT_EQ(job.state, JobState::kAvailable);
  EXPECT_EQ(job.priority, kDefaultPriority);
  EXPECT_EQ(job.priority, 100);
  EXPECT_TIME_WITHIN(job.run_at, before, after);
  EXPECT_EQ(job.attempts, 0);
  EXPECT_EQ(job.max_attempts, kDefaultMaxAttempts);
  EXPECT_EQ(job.max_attempts, 25);
  EXPECT_FALSE(job.lease_token.has_value());
  EXPECT_FALSE(job.leased_by.has_value());
  EXPECT_FALSE(job.lease_expires_at.has_value());
  EXPECT_TIME_WITHIN(job.enqueued_at, before, after);
  EXPECT_FALSE(job.started_at.has_value());
  EXPECT_FALSE(job.finished_at.has_value());
  EXPECT_FALSE(job.unique_key.has_value());
  EXPECT_FALSE(job.last_error.has_value());
  EXPECT_EQ(job.payload, "{\"to\":\"x\"}");
}

TEST_P(QueueTest, EnqueueKeepsPriorityMaxAttemptsAndUniqueKey) {
  auto spec = new_job("mail");
  spec.priority = 7;
  spec.max_attempts = 3;
  spec.unique_key = "invoice-42";
  Job job = get(enqueue(spec));
  EXPECT_EQ(job.priority, 7);
  EXPECT_EQ(job.max_attempts, 3);
  EXPECT_EQ(job.unique_key, std::optional<std::string>("invoice-42"));
  EXPECT_EQ(job.state, JobState::kAvailable);
}

TEST_P(QueueTest, EnqueueWithDelaySetsRunAtThatFarInTheFuture) {
  auto spec = new_job("mail");
  spec.delay = std::chrono::hours(1);
  TimePoint before = now();
  JobId id = enqueue(spec);
  TimePoint after = now();
  Job job = get(id);
  EXPECT_TIME_WITHIN(job.run_at, before + std::chrono::hours(1), after + std::chrono::hours(1));
  EXPECT_TIME_WITHIN(job.enqueued_at, before, after);
  EXPECT_EQ(job.state, JobState::kAvailable);
}

TEST_P(QueueTest, EnqueueWithRunAtStoresItToTheMicrosecond) {
  TimePoint run_at = now() + std::chrono::hours(2) + std::chrono::microseconds(123457);
  auto spec = new_job("mail");
  spec.run_at = run_at;
  Job job = get(enqueue(spec));
  EXPECT_EQ(format_time(job.run_at), format_time(run_at));
}

TEST_P(QueueTest, EnqueueWithRunAtInThePastIsLeasableNow) {
  auto spec = new_job("mail");
  spec.run_at = now() - std::chrono::hours(24 * 365);
  JobId id = enqueue(spec);
  EXPECT_EQ(lease_one("mail").id, id);
}

TEST_P(QueueTest, EnqueueBatchReturnsOneIncreasingIdPerJobInOrder) {
  std::vector<NewJob> jobs;
  for (int i = 0; i < 50; ++i) {
    auto spec = new_job(i % 3 ? "a" : "b", "job-" + std::to_string(i));
    spec.priority = i;
    jobs.push_back(spec);
  }
  TimePoint before = now();
  auto enqueued = ok(q().enqueue_batch(jobs));
  TimePoint after = now();
  ASSERT_EQ(enqueued.size(), jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_TRUE(enqueued[i].inserted);
    if (i > 0) {
      EXPECT_GT(enqueued[i].id, enqueued[i - 1].id);
    }
    Job job = get(enqueued[i].id);
    EXPECT_EQ(job.queue, jobs[i].queue);
    EXPECT_EQ(job.payload, jobs[i].payload);
    EXPECT_EQ(job.priority, jobs[i].priority);
    EXPECT_EQ(job.state, JobState::kAvailable);
    EXPECT_EQ(job.attempts, 0);
    EXPECT_TIME_WITHIN(job.enqueued_at, before, after);
  }
}

// Engines may send a batch whose jobs share everything but their payloads in a shorter
// form (PostgreSQL does): every shared column must still land on every job, in order.
TEST_P(QueueTest, EnqueueBatchOfJobsThatShareAllButThePayloadKeepsTheSharedColumns) {
  const TimePoint run_at = now() + std::chrono::hours(3) + std::chrono::microseconds(250001);
  std::vector<NewJob> at_a_time;
  std::vector<NewJob> delayed;
  for (int i = 0; i < 5; ++i) {
    auto spec = new_job("mail", "p" + std::to_string(i));
    spec.priority = 7;
    spec.max_attempts = 3;
    spec.run_at = run_at;
    at_a_time.push_back(spec);
    spec.run_at.reset();
    spec.delay = std::chrono::hours(1);
    delayed.push_back(spec);
  }
  auto first = ok(q().enqueue_batch(at_a_time));
  const TimePoint before = now();
  auto second = ok(q().enqueue_batch(delayed));
  const TimePoint after = now();
  ASSERT_EQ(first.size(), 5u);
  ASSERT_EQ(second.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    for (const auto* batch : {&first, &second}) {
      const Job job = get((*batch)[i].id);
      EXPECT_EQ(job.queue, "mail");
      EXPECT_EQ(job.payload, "p" + std::to_string(i));
      EXPECT_EQ(job.priority, 7);
      EXPECT_EQ(job.max_attempts, 3);
      EXPECT_EQ(job.state, JobState::kAvailable);
      if (i > 0) {
        EXPECT_GT((*batch)[i].id, (*batch)[i - 1].id);
      }
    }
    EXPECT_EQ(format_time(get(first[i].id).run_at), format_time(run_at));
    EXPECT_TIME_WITHIN(get(second[i].id).run_at, before + std::chrono::hours(1),
                       after + std::chrono::hours(1));
  }
}

// ... and a batch of jobs that differ in one other column keeps each job's own: one batch
// of two jobs for each column.
TEST_P(QueueTest, EnqueueBatchKeepsEachJobsOwnColumnWhereOnlyOneDiffers) {
  const TimePoint later = now() + std::chrono::hours(5);
  auto batch_of_two = [&](auto&& change_second) {
    std::vector<NewJob> jobs(2, new_job("mail", "same"));
    change_second(jobs[1]);
    auto enqueued = ok(q().enqueue_batch(jobs));
    EXPECT_EQ(enqueued.size(), 2u);
    return std::pair(get(enqueued.at(0).id), get(enqueued.at(1).id));
  };
  auto [a, b] = batch_of_two([](NewJob& j) { j.queue = "sms"; });
  EXPECT_EQ(a.queue, "mail");
  EXPECT_EQ(b.queue, "sms");
  std::tie(a, b) = batch_of_two([](NewJob& j) { j.priority = 3; });
  EXPECT_EQ(a.priority, kDefaultPriority);
  EXPECT_EQ(b.priority, 3);
  std::tie(a, b) = batch_of_two([](NewJob& j) { j.max_attempts = 9; });
  EXPECT_EQ(a.max_attempts, kDefaultMaxAttempts);
  EXPECT_EQ(b.max_attempts, 9);
  std::tie(a, b) = batch_of_two([&](NewJob& j) { j.run_at = later; });
  EXPECT_LT(a.run_at, now() + std::chrono::minutes(1));
  EXPECT_EQ(format_time(b.run_at), format_time(later));
  std::tie(a, b) = batch_of_two([](NewJob& j) { j.delay = std::chrono::hours(2); });
  EXPECT_LT(a.run_at, now() + std::chrono::minutes(1));
  EXPECT_GT(b.run_at, now() + std::chrono::minutes(100));
}

TEST_P(QueueTest, EnqueueBatchOfOneThousandArrivesWhole) {
  std::vector<NewJob> jobs;
  for (int i = 0; i < 1000; ++i) jobs.push_back(new_job("bulk", std::to_string(i)));
  auto enqueued = ok(q().enqueue_batch(jobs));
  ASSERT_EQ(enqueued.size(), 1000u);
  auto stats = ok(q().stats("bulk"));
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].available, 1000);
  std::set<JobId> ids;
  for (const auto& e : enqueued) ids.insert(e.id);
  EXPECT_EQ(ids.size(), 1000u);
}

TEST_P(QueueTest, ExtremePrioritiesAreStoredExactlyOrRejectedClearly) {
  for (int priority :
       {std::numeric_limits<int>::min(), -32769, 32768, std::numeric_limits<int>::max()}) {
    auto spec = new_job("q");
    spec.priority = priority;
    auto enqueued = q().enqueue(spec);
    if (enqueued) {
      EXPECT_EQ(get(enqueued->id).priority, priority);
    } else {
      EXPECT_EQ(enqueued.error().code, ErrorCode::kInvalidArgument)
          << priority << ": " << enqueued.error().message;
    }
  }
}

// --- unique keys ---

NewJob keyed(std::string queue, std::string key, std::string payload = "payload") {
  auto spec = new_job(std::move(queue), std::move(payload));
  spec.unique_key = std::move(key);
  return spec;
}

TEST_P(QueueTest, UniqueKeyDedupesWhileTheHolderIsAvailable) {
  auto first = ok(q().enqueue(keyed("mail", "k", "first")));
  auto second = ok(q().enqueue(keyed("mail", "k", "second")));
  EXPECT_TRUE(first.inserted);
  EXPECT_FALSE(second.inserted);
  EXPECT_EQ(second.id, first.id);
  EXPECT_EQ(all_jobs().size(), 1u);
  EXPECT_EQ(get(first.id).payload, "first") << "the holder must not be overwritten";
}

TEST_P(QueueTest, UniqueKeyDedupesWhileTheHolderIsRunning) {
  auto first = ok(q().enqueue(keyed("mail", "k")));
  Job leased = lease_one("mail");
  ASSERT_EQ(leased.id, first.id);
  std::string before = dump(get(first.id));
  auto second = ok(q().enqueue(keyed("mail", "k", "again")));
  EXPECT_FALSE(second.inserted);
  EXPECT_EQ(second.id, first.id);
  EXPECT_EQ(dump(get(first.id)), before) << "the running holder must not change";
  EXPECT_EQ(all_jobs().size(), 1u);
}

TEST_P(QueueTest, UniqueKeyDedupesWhileTheHolderIsScheduled) {
  auto spec = keyed("mail", "k");
  spec.delay = std::chrono::hours(1);
  auto first = ok(q().enqueue(spec));
  auto second = ok(q().enqueue(keyed("mail", "k")));
  EXPECT_FALSE(second.inserted);
  EXPECT_EQ(second.id, first.id);
}

TEST_P(QueueTest, UniqueKeyIsFreeAgainOnceTheHolderSucceeded) {
  auto first = ok(q().enqueue(keyed("mail", "k")));
  Job leased = lease_one("mail");
  ok(q().complete(leased.id, *leased.lease_token));
  auto second = ok(q().enqueue(keyed("mail", "k")));
  EXPECT_TRUE(second.inserted);
  EXPECT_GT(second.id, first.id);
  EXPECT_EQ(get(second.id).state, JobState::kAvailable);
  EXPECT_EQ(get(first.id).state, JobState::kSucceeded);
}

TEST_P(QueueTest, UniqueKeyIsFreeAgainOnceTheHolderIsDead) {
  auto spec = keyed("mail", "k");
  spec.max_attempts = 1;
  auto first = ok(q().enqueue(spec));
  Job leased = lease_one("mail");
  EXPECT_EQ(ok(q().fail(leased.id, *leased.lease_token, "boom")), FailOutcome::kDead);
  auto second = ok(q().enqueue(keyed("mail", "k")));
  EXPECT_TRUE(second.inserted);
  EXPECT_NE(second.id, first.id);
}

TEST_P(QueueTest, UniqueKeyIsFreeAgainOnceTheHolderIsCancelled) {
  auto first = ok(q().enqueue(keyed("mail", "k")));
  ok(q().cancel(std::vector<JobId>{first.id}));
  auto second = ok(q().enqueue(keyed("mail", "k")));
  EXPECT_TRUE(second.inserted);
  EXPECT_NE(second.id, first.id);
}

TEST_P(QueueTest, UniqueKeyIsHeldPerQueue) {
  auto a = ok(q().enqueue(keyed("a", "k")));
  auto b = ok(q().enqueue(keyed("b", "k")));
  EXPECT_TRUE(a.inserted);
  EXPECT_TRUE(b.inserted);
  EXPECT_NE(a.id, b.id);
}

TEST_P(QueueTest, UniqueKeyDoesNotDedupeJobsWithoutAKey) {
  JobId a = enqueue("mail");
  JobId b = enqueue("mail");
  EXPECT_NE(a, b);
}

TEST_P(QueueTest, EnqueueBatchWithADuplicateKeyInsideItInsertsItOnce) {
  std::vector<NewJob> jobs = {keyed("mail", "k", "one"), new_job("mail", "plain"),
                              keyed("mail", "k", "two"), keyed("mail", "other", "three")};
  auto enqueued = ok(q().enqueue_batch(jobs));
  ASSERT_EQ(enqueued.size(), 4u);
  EXPECT_TRUE(enqueued[0].inserted);
  EXPECT_TRUE(enqueued[1].inserted);
  EXPECT_FALSE(enqueued[2].inserted);
  EXPECT_EQ(enqueued[2].id, enqueued[0].id);
  EXPECT_TRUE(enqueued[3].inserted);
  EXPECT_EQ(all_jobs().size(), 3u);
  EXPECT_EQ(get(enqueued[0].id).payload, "one");
}

TEST_P(QueueTest, EnqueueBatchWithAKeyHeldByAnExistingJobReturnsThatJob) {
  auto holder = ok(q().enqueue(keyed("mail", "k")));
  std::vector<NewJob> jobs = {new_job("mail", "x"), keyed("mail", "k", "dup")};
  auto enqueued = ok(q().enqueue_batch(jobs));
  ASSERT_EQ(enqueued.size(), 2u);
  EXPECT_TRUE(enqueued[0].inserted);
  EXPECT_FALSE(enqueued[1].inserted);
  EXPECT_EQ(enqueued[1].id, holder.id);
  EXPECT_EQ(all_jobs().size(), 2u);
}

TEST_P(QueueTest, ConcurrentEnqueuesOfOneUniqueKeyInsertOneJob) {
  constexpr int kThreads = 6;
  constexpr int kKeys = 15;
  q();
  std::vector<Queue> handles;
  for (int t = 0; t < kThreads; ++t) handles.push_back(open_another());
  std::vector<std::vector<Result<Enqueued>>> results(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready < kThreads) std::this_thread::yield();  // start together
      for (int k = 0; k < kKeys; ++k) {
        auto spec = keyed("q", "key-" + std::to_string(k), "from thread " + std::to_string(t));
        results[t].push_back(handles[t].enqueue(spec));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int k = 0; k < kKeys; ++k) {
    std::set<JobId> ids;
    int inserted = 0;
    for (int t = 0; t < kThreads; ++t) {
      const auto& result = results[t][k];
      if (!result) {
        // Busy is an acceptable answer under contention; a duplicate-key crash is not.
        EXPECT_EQ(result.error().code, ErrorCode::kUnavailable) << result.error().message;
        continue;
      }
      ids.insert(result->id);
      inserted += result->inserted ? 1 : 0;
    }
    EXPECT_EQ(ids.size(), 1u) << "key-" << k << " was given to " << ids.size() << " jobs";
    EXPECT_EQ(inserted, 1) << "key-" << k;
  }
  ListRequest request;
  request.limit = 1000;
  EXPECT_EQ(ok(q().list(request)).size(), static_cast<std::size_t>(kKeys));
}

TEST_P(QueueTest, RetryDoesNotGiveAUniqueKeyToASecondLiveJob) {
  auto spec = keyed("q", "k");
  spec.max_attempts = 1;
  JobId old_holder = enqueue(spec);
  Job leased = lease_one("q");
  EXPECT_EQ(ok(q().fail(old_holder, *leased.lease_token, "boom")), FailOutcome::kDead);
  auto new_holder = ok(q().enqueue(keyed("q", "k")));
  ASSERT_TRUE(new_holder.inserted);
  // Retrying the dead job would make two live jobs hold "k": it must be refused (as a
  // conflict) or skipped, not done.
  auto retried = q().retry(std::vector<JobId>{old_holder});
  if (retried) {
    EXPECT_TRUE(retried->empty()) << "retried a job whose unique key is held by another";
  } else {
    EXPECT_EQ(retried.error().code, ErrorCode::kConflict) << retried.error().message;
  }
  int live_with_key = 0;
  for (const auto& job : all_jobs()) {
    if (job.unique_key == std::optional<std::string>("k") &&
        (job.state == JobState::kAvailable || job.state == JobState::kRunning)) {
      ++live_with_key;
    }
  }
  EXPECT_EQ(live_with_key, 1);
}

TEST_P(QueueTest, EnqueueBatchOfTwentyThousandArrivesWhole) {
  std::vector<NewJob> jobs;
  for (int i = 0; i < 20000; ++i) jobs.push_back(new_job("bulk", std::to_string(i)));
  auto enqueued = ok(q().enqueue_batch(jobs));
  ASSERT_EQ(enqueued.size(), jobs.size());
  EXPECT_EQ(get(enqueued.back().id).payload, "19999");
  // lease takes at most 10,000 jobs a call (a limit of the API, not of the batch).
  auto leased = lease("bulk", 10000, "w", std::chrono::minutes(5));
  auto rest = lease("bulk", 10000, "w", std::chrono::minutes(5));
  leased.insert(leased.end(), rest.begin(), rest.end());
  ASSERT_EQ(leased.size(), jobs.size());
  std::vector<LeasedRef> refs;
  for (const auto& job : leased) refs.push_back({job.id, *job.lease_token});
  auto held = ok(q().complete_batch(refs));
  EXPECT_EQ(std::count(held.begin(), held.end(), true), 20000);
}

// --- payload bytes ---

TEST_P(QueueTest, PayloadsWithNulAndInvalidUtf8RoundTripByteExact) {
  using namespace std::string_literals;
  const std::vector<std::string> payloads = {
      "\0"s,           "a\0b\0\0c"s,        "\xff\xfe\xfd"s,
      "\xc3\x28"s,     "\xed\xa0\x80"s,  // lone surrogate
      "\x80"s,         "\xf4\x90\x80\x80"s, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"s,
      "' OR 1=1; --"s, "\r\n\t\x01\x7f"s};
  std::vector<JobId> ids;
  for (const auto& payload : payloads) ids.push_back(enqueue("bytes", payload));
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(get(ids[i]).payload, payloads[i]) << "get of payload " << i;
  }
  auto listed = all_jobs();
  ASSERT_EQ(listed.size(), payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(listed[i].payload, payloads[i]) << "list of payload " << i;
  }
  auto leased = lease("bytes", static_cast<int>(payloads.size()));
  ASSERT_EQ(leased.size(), payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(leased[i].payload, payloads[i]) << "lease of payload " << i;
  }
}

TEST_P(QueueTest, PayloadsInABatchRoundTripByteExact) {
  using namespace std::string_literals;
  std::vector<NewJob> jobs = {new_job("bytes", "\0\xff"s), new_job("bytes", "x\0"s)};
  auto enqueued = ok(q().enqueue_batch(jobs));
  ASSERT_EQ(enqueued.size(), 2u);
  EXPECT_EQ(get(enqueued[0].id).payload, "\0\xff"s);
  EXPECT_EQ(get(enqueued[1].id).payload, "x\0"s);
}

TEST_P(QueueTest, AOneMebibytePayloadRoundTrips) {
  std::string payload(1 << 20, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<char>((i * 2654435761u) >> 13);
  }
  JobId id = enqueue("big", payload);
  EXPECT_TRUE(get(id).payload == payload) << "get changed the payload";
  Job leased = lease_one("big");
  EXPECT_EQ(leased.payload.size(), payload.size());
  EXPECT_TRUE(leased.payload == payload) << "lease changed the payload";
}

TEST_P(QueueTest, EmptyPayloadRoundTrips) {
  JobId id = enqueue("mail", "");
  EXPECT_EQ(get(id).payload, "");
}

TEST_P(QueueTest, JobsOutliveTheHandleThatEnqueuedThem) {
  JobId id = enqueue("mail", "durable");
  Queue other = open_another();
  auto job = ok(other.get(id));
  EXPECT_EQ(job.payload, "durable");
}

TEST_P(QueueTest, InitIsIdempotent) {
  int version = ok(q().init());
  EXPECT_GE(version, 1);
  EXPECT_EQ(ok(q().init()), version);
  JobId id = enqueue("mail");
  EXPECT_EQ(ok(q().init()), version);
  EXPECT_EQ(get(id).state, JobState::kAvailable) << "init must not touch the jobs";
}

}  // namespace
}  // namespace readpast::test
