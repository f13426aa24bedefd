// list and list_page beyond filters: order, paging both ways, the derived views (scheduled,
// retrying, expired), search, the scan window; and remove (deleting finished jobs by id).
#include <algorithm>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

std::vector<JobId> reversed(std::vector<JobId> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

TEST_P(QueueTest, ListNewestFirstPagesBackwardsAndForwardsById) {
  std::vector<JobId> all;
  for (int i = 0; i < 7; ++i) all.push_back(enqueue(i % 2 ? "a" : "b"));
  ListRequest request;
  request.order = ListOrder::kNewestFirst;
  request.limit = 3;
  auto first = ok(q().list_page(request));
  EXPECT_EQ(ids_of(first.jobs), (std::vector<JobId>{all[6], all[5], all[4]}));
  ASSERT_EQ(first.resume_id, std::optional<JobId>(all[4]));
  request.before_id = first.resume_id;
  auto second = ok(q().list_page(request));
  EXPECT_EQ(ids_of(second.jobs), (std::vector<JobId>{all[3], all[2], all[1]}));
  request.before_id = second.resume_id;
  auto third = ok(q().list_page(request));
  EXPECT_EQ(ids_of(third.jobs), (std::vector<JobId>{all[0]}));
  EXPECT_FALSE(third.resume_id.has_value()) << "the last page says there is no more";

  // Both bounds: the ids strictly between them, either way round.
  ListRequest between;
  between.after_id = all[1];
  between.before_id = all[5];
  EXPECT_EQ(ids_of(ok(q().list(between))), (std::vector<JobId>{all[2], all[3], all[4]}));
  between.order = ListOrder::kNewestFirst;
  EXPECT_EQ(ids_of(ok(q().list(between))), (std::vector<JobId>{all[4], all[3], all[2]}));

  // Newest first within a queue, and within a queue and a state.
  ListRequest in_a;
  in_a.queue = "a";
  in_a.order = ListOrder::kNewestFirst;
  EXPECT_EQ(ids_of(ok(q().list(in_a))), (std::vector<JobId>{all[5], all[3], all[1]}));
  in_a.state = JobState::kAvailable;
  in_a.before_id = all[5];
  EXPECT_EQ(ids_of(ok(q().list(in_a))), (std::vector<JobId>{all[3], all[1]}));
  // The default order stays oldest first.
  EXPECT_EQ(ids_of(ok(q().list(ListRequest{}))), all);
}

TEST_P(QueueTest, ListNewestFirstOfRunningAndDeadJobs) {
  std::vector<JobId> running;
  for (int i = 0; i < 3; ++i) enqueue("q");
  for (const auto& job : lease("q", 3)) running.push_back(job.id);
  std::sort(running.begin(), running.end());
  JobId dead1 = dead_job("q");
  JobId dead2 = dead_job("q");
  ListRequest request;
  request.queue = "q";
  request.order = ListOrder::kNewestFirst;
  request.state = JobState::kRunning;
  EXPECT_EQ(ids_of(ok(q().list(request))), reversed(running));
  request.state = JobState::kDead;
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{dead2, dead1}));
  request.queue.reset();
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{dead2, dead1}));
}

TEST_P(QueueTest, ListViewsScheduledRetryingAndExpired) {
  JobId due = enqueue("q");
  auto later = new_job("q");
  later.delay = std::chrono::hours(1);
  JobId scheduled = enqueue(later);
  JobId failed = enqueue("q");
  // Retrying: failed once, back to available (not due yet: retry_after).
  Job to_fail = lease_one("q");
  ASSERT_EQ(to_fail.id, due);
  FailOptions in_an_hour;
  in_an_hour.retry_after = std::chrono::hours(1);
  ASSERT_EQ(ok(q().fail(due, *to_fail.lease_token, "boom", in_an_hour)), FailOutcome::kRetrying);
  // Expired: running with a lease that has passed; another running job whose lease has not.
  Job expiring = lease_one("q", "worker-x", kShortLease);
  ASSERT_EQ(expiring.id, failed);
  JobId live = enqueue("q");
  Job holding = lease_one("q", "worker-y", std::chrono::hours(1));
  ASSERT_EQ(holding.id, live);
  std::this_thread::sleep_for(kShortLease + std::chrono::milliseconds(200));

  ListRequest request;
  request.view = ListView::kScheduled;
  // `due` failed with a retry in an hour: it is scheduled and retrying at once.
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{due, scheduled}));
  request.view = ListView::kRetrying;
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{due}));
  request.view = ListView::kExpired;
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{failed}));
  // Within a queue, with the state the view implies, newest first.
  request.queue = "q";
  request.state = JobState::kRunning;
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{failed}));
  request.view = ListView::kScheduled;
  request.state = JobState::kAvailable;
  request.order = ListOrder::kNewestFirst;
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{scheduled, due}));
  // A view with a state it is not part of is refused.
  request.state = JobState::kDead;
  EXPECT_ERROR_CODE(q().list(request), ErrorCode::kInvalidArgument);
  request.view = ListView::kExpired;
  request.state = JobState::kAvailable;
  EXPECT_ERROR_CODE(q().list_page(request), ErrorCode::kInvalidArgument);
}

TEST_P(QueueTest, ListSearchFindsPayloadWorkerUniqueKeyAndErrorInAnyCase) {
  JobId by_payload = enqueue("q", R"({"to":"Alice@Example.com"})");
  auto keyed = new_job("q");
  keyed.unique_key = "invoice-ALICE-7";
  JobId by_key = enqueue(keyed);
  JobId by_worker = enqueue("w");
  Job leased = lease_one("w", "host-alice/42");
  ASSERT_EQ(leased.id, by_worker);
  JobId by_error = enqueue("e");
  Job failing = lease_one("e");
  ok(q().fail(by_error, *failing.lease_token, "smtp: mailbox alice unavailable"));
  JobId other = enqueue("q", "bob");
  // Wildcards are taken literally.
  JobId percent = enqueue("q", "100% done_now");

  ListRequest request;
  request.search = "ALICE";
  EXPECT_EQ(ids_of(ok(q().list(request))),
            (std::vector<JobId>{by_payload, by_key, by_worker, by_error}));
  request.search = "example.COM";
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{by_payload}));
  request.search = "%";
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{percent}));
  request.search = "e_n";
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{percent}));
  request.search = "\\";
  EXPECT_TRUE(ok(q().list(request)).empty());
  request.search = "nobody";
  EXPECT_TRUE(ok(q().list(request)).empty());
  // With a queue and a state, newest first.
  request.search = "o";
  request.queue = "q";
  request.state = JobState::kAvailable;
  request.order = ListOrder::kNewestFirst;
  EXPECT_EQ(ids_of(ok(q().list(request))),
            (std::vector<JobId>{percent, other, by_key, by_payload}));
  // Bad search texts are refused.
  request.search = "";
  EXPECT_ERROR_CODE(q().list(request), ErrorCode::kInvalidArgument);
  request.search = std::string(kMaxListSearchBytes + 1, 'x');
  EXPECT_ERROR_CODE(q().list(request), ErrorCode::kInvalidArgument);
  request.search = std::string("a\0b", 3);
  EXPECT_ERROR_CODE(q().list(request), ErrorCode::kInvalidArgument);
  request.search = "\xff";
  EXPECT_ERROR_CODE(q().list(request), ErrorCode::kInvalidArgument);
}

TEST_P(QueueTest, ListSearchMatchesNonAsciiAndBinaryPayloadsByBytes) {
  JobId accented = enqueue("q", "caf\xc3\xa9 cr\xc3\xa8me");
  JobId binary = enqueue("q", std::string("\x00\xff\\x\x80-tail", 10));
  enqueue("q", "cafe creme");
  ListRequest request;
  request.search = "caf\xc3\xa9";
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{accented}));
  request.search = "\\x";
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{binary}));
  request.search = "-TAIL";
  EXPECT_EQ(ids_of(ok(q().list(request))), (std::vector<JobId>{binary}));
}

TEST_P(QueueTest, ListScanLimitBoundsASearchAndSaysWhereToGoOn) {
  // 30 jobs; the matches are ids 3, 17 and 28 of them.
  std::vector<JobId> all;
  for (int i = 0; i < 30; ++i) {
    const bool match = i == 3 || i == 17 || i == 28;
    all.push_back(enqueue("q", match ? "needle" : "hay"));
  }
  for (ListOrder order : {ListOrder::kNewestFirst, ListOrder::kOldestFirst}) {
    SCOPED_TRACE(order == ListOrder::kNewestFirst ? "newest first" : "oldest first");
    ListRequest request;
    request.search = "needle";
    request.order = order;
    request.limit = 10;
    request.scan_limit = 8;
    std::vector<JobId> found;
    int requests = 0;
    while (true) {
      auto page = ok(q().list_page(request));
      ++requests;
      EXPECT_LE(page.jobs.size(), 8u);
      for (const auto& job : page.jobs) found.push_back(job.id);
      if (!page.resume_id) break;
      ASSERT_LT(requests, 10) << "the scan does not advance";
      if (order == ListOrder::kNewestFirst) {
        request.before_id = page.resume_id;
      } else {
        request.after_id = page.resume_id;
      }
    }
    std::vector<JobId> expected{all[3], all[17], all[28]};
    if (order == ListOrder::kNewestFirst) expected = reversed(expected);
    EXPECT_EQ(found, expected);
    const JobId span = all.back() - all.front() + 1;  // 30 unless the engine skipped ids
    EXPECT_EQ(requests, (span + 7) / 8) << "every request but the last looks at 8 ids";
  }
  // A full page resumes at its last job, even inside the window.
  ListRequest request;
  request.search = "needle";
  request.limit = 1;
  request.scan_limit = 1000;
  auto page = ok(q().list_page(request));
  ASSERT_EQ(ids_of(page.jobs), (std::vector<JobId>{all[3]}));
  EXPECT_EQ(page.resume_id, std::optional<JobId>(all[3]));
  // A state without a queue is bounded too (no index range holds just it).
  ListRequest state_only;
  state_only.state = JobState::kAvailable;
  state_only.scan_limit = 8;
  auto window = ok(q().list_page(state_only));
  EXPECT_EQ(ids_of(window.jobs), std::vector<JobId>(all.begin(), all.begin() + 8));
  EXPECT_EQ(window.resume_id, std::optional<JobId>(all.front() + 7));
  // With no filter, a queue, or a queue and a state, the scan limit changes nothing.
  ListRequest plain;
  plain.scan_limit = 2;
  EXPECT_EQ(ok(q().list(plain)).size(), 30u);
  plain.queue = "q";
  EXPECT_EQ(ok(q().list(plain)).size(), 30u);
  plain.state = JobState::kAvailable;
  EXPECT_EQ(ok(q().list(plain)).size(), 30u);
  plain.scan_limit = 0;
  EXPECT_ERROR_CODE(q().list(plain), ErrorCode::kInvalidArgument);
}

TEST_P(QueueTest, ListWithAScanLimitOfAnEmptyTableIsEmpty) {
  ListRequest request;
  request.view = ListView::kScheduled;
  request.scan_limit = 10;
  auto page = ok(q().list_page(request));
  EXPECT_TRUE(page.jobs.empty());
  EXPECT_FALSE(page.resume_id.has_value());
}

TEST_P(QueueTest, RemoveDeletesFinishedJobsOnly) {
  JobId done = succeeded_job("q");
  JobId dead = dead_job("q");
  JobId cancelled = cancelled_job("q");
  JobId available = enqueue("q");
  JobId running = enqueue("r");
  lease_one("r");
  std::vector<JobId> asked{available, done, running, dead, cancelled, 999999};
  auto removed = ok(q().remove(asked));
  std::sort(removed.begin(), removed.end());
  EXPECT_EQ(removed, (std::vector<JobId>{done, dead, cancelled}));
  EXPECT_ERROR_CODE(q().get(done), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(q().get(dead), ErrorCode::kNotFound);
  EXPECT_ERROR_CODE(q().get(cancelled), ErrorCode::kNotFound);
  EXPECT_EQ(get(available).state, JobState::kAvailable);
  EXPECT_EQ(get(running).state, JobState::kRunning);
  EXPECT_TRUE(ok(q().remove(std::vector<JobId>{})).empty());
}

}  // namespace
}  // namespace readpast::test
