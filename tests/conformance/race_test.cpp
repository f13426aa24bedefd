// Two handles racing on the same jobs: whatever the interleaving, the answers each caller
// got must agree with each other and with the rows left behind.
#include <set>
#include <thread>

#include "conformance/queue_test.hpp"

namespace readpast::test {
namespace {

constexpr int kRacingJobs = 60;

std::vector<Job> lease_racing_jobs(Queue& queue, Duration lease) {
  std::vector<NewJob> specs;
  for (int i = 0; i < kRacingJobs; ++i) specs.push_back(new_job("race", std::to_string(i)));
  ok(queue.enqueue_batch(specs));
  auto jobs = ok(queue.lease(LeaseRequest{"race", "racer", kRacingJobs, lease}));
  if (jobs.size() != static_cast<std::size_t>(kRacingJobs)) {
    throw UnexpectedError("leased " + std::to_string(jobs.size()) + " racing jobs");
  }
  return jobs;
}

TEST_P(QueueTest, CancelRacingCompleteAgreesOnTheWinner) {
  auto jobs = lease_racing_jobs(q(), std::chrono::minutes(5));
  Queue canceller = open_another();
  std::vector<int> completed(jobs.size(), -1);  // 1 accepted, 0 lease lost
  std::vector<JobId> cancelled;
  std::string error;
  std::thread completer([&] {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto status = q().complete(jobs[i].id, *jobs[i].lease_token);
      if (status) {
        completed[i] = 1;
      } else if (status.error().is_lease_lost()) {
        completed[i] = 0;
      } else {
        error = status.error().message;
      }
    }
  });
  // Cancel from the other end, one by one, so the two meet in the middle.
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    auto result = canceller.cancel(std::vector<JobId>{it->id});
    ASSERT_TRUE(result.has_value()) << result.error().message;
    cancelled.insert(cancelled.end(), result->begin(), result->end());
  }
  completer.join();
  ASSERT_EQ(error, "");
  std::set<JobId> cancelled_set(cancelled.begin(), cancelled.end());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const JobId id = jobs[i].id;
    const bool was_cancelled = cancelled_set.count(id) == 1;
    EXPECT_NE(completed[i] == 1, was_cancelled)
        << "job " << id << ": complete " << (completed[i] == 1 ? "accepted" : "refused")
        << ", cancel " << (was_cancelled ? "took it" : "did not");
    EXPECT_EQ(get(id).state, was_cancelled ? JobState::kCancelled : JobState::kSucceeded);
  }
}

TEST_P(QueueTest, RescueRacingCompleteAgreesOnTheWinner) {
  QueueOptions options;
  options.rescue_interval = std::chrono::hours(1);  // only the explicit rescues below
  open(options);
  auto jobs = lease_racing_jobs(q(), kShortLease);
  Queue rescuer = open_another(options);
  // Wait until the leases have expired, then race completions against rescues.
  std::this_thread::sleep_for(kShortLease + std::chrono::milliseconds(50));  // time must pass
  std::vector<int> completed(jobs.size(), -1);
  std::string error;
  std::thread completer([&] {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      auto status = q().complete(jobs[i].id, *jobs[i].lease_token);
      if (status) {
        completed[i] = 1;
      } else if (status.error().is_lease_lost()) {
        completed[i] = 0;
      } else {
        error = status.error().message;
      }
    }
  });
  std::int64_t rescued = 0;
  for (int i = 0; i < 3; ++i) rescued += ok(rescuer.rescue_expired("race"));
  completer.join();
  ASSERT_EQ(error, "");
  rescued += ok(rescuer.rescue_expired("race"));
  std::int64_t accepted = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    Job job = get(jobs[i].id);
    if (completed[i] == 1) {
      ++accepted;
      EXPECT_EQ(job.state, JobState::kSucceeded) << "job " << job.id;
    } else {
      EXPECT_EQ(job.state, JobState::kAvailable) << "job " << job.id;
    }
  }
  EXPECT_EQ(accepted + rescued, kRacingJobs) << "each job was either completed or rescued";
}

}  // namespace
}  // namespace readpast::test
