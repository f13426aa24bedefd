// When a queue's fetcher leases more jobs (worker/refill.hpp).
#include "worker/refill.hpp"

#include <gtest/gtest.h>

namespace readpast::worker {
namespace {

TEST(RefillTest, WithoutPrefetchEveryFreeThreadGetsAJobAtOnce) {
  EXPECT_TRUE(should_lease(8, 0, 0, 0, 0));
  EXPECT_TRUE(should_lease(8, 0, 7, 0, 0)) << "one thread idle";
  EXPECT_FALSE(should_lease(8, 0, 8, 0, 0)) << "every thread busy";
  EXPECT_TRUE(should_lease(1, 0, 0, 0, 0));
  EXPECT_FALSE(should_lease(1, 0, 1, 0, 0));
}

TEST(RefillTest, WithPrefetchShortJobsAreLeasedInLargeBatches) {
  // 8 threads, 500 ahead: 508 slots.
  EXPECT_TRUE(should_lease(8, 500, 0, 0, 0));
  EXPECT_FALSE(should_lease(8, 500, 507, 499, 0)) << "one slot free, plenty waiting: no lease of 1";
  EXPECT_FALSE(should_lease(8, 500, 255, 247, 0)) << "under half free, enough waiting";
  EXPECT_TRUE(should_lease(8, 500, 254, 246, 0)) << "half the capacity free";
  EXPECT_FALSE(should_lease(8, 500, 508, 500, 0)) << "nothing free";
}

TEST(RefillTest, WithPrefetchThreadsAboutToIdleGetJobsWhateverIsFree) {
  // Long jobs: 8 running, fewer than 8 waiting: lease now, or a thread goes idle.
  EXPECT_TRUE(should_lease(8, 10, 15, 7, 0));
  EXPECT_FALSE(should_lease(8, 10, 16, 8, 0));
  EXPECT_FALSE(should_lease(8, 10, 18, 2, 0)) << "nothing free";
}

TEST(RefillTest, FinishedJobsWaitingForTheirSettlingCallTakeNoSlot) {
  // 8 threads, 500 ahead, every job handled: 300 wait for the completer's batch. Counted
  // against the capacity, they kept the fetcher from leasing until their batch returned.
  EXPECT_TRUE(should_lease(8, 500, 0, 0, 300));
  EXPECT_TRUE(should_lease(8, 500, 200, 192, 300)) << "more than half the slots free";
  EXPECT_FALSE(should_lease(8, 500, 300, 292, 200)) << "under half free, enough waiting";
}

TEST(RefillTest, WithoutPrefetchAFinishedJobHoldsItsSlotUntilItIsSettled) {
  // 3 threads: 2 run, 1 finished and waits for its completion to be recorded. A lease now
  // would hold 4 leases for 3 threads.
  EXPECT_FALSE(should_lease(3, 0, 2, 0, 1));
  EXPECT_TRUE(should_lease(3, 0, 1, 0, 1));
  EXPECT_EQ(free_slots(3, 0, 1, 1), 1);
  EXPECT_EQ(free_slots(3, 1, 1, 1), 3) << "with prefetch it takes no slot";
}

TEST(RefillTest, FourTimesTheCapacityOfJobsWaitingToBeSettledStopsTheFetcher) {
  // The database records settlings slower than handlers finish: lease no more until it
  // catches up, however many slots are free.
  EXPECT_EQ(settling_limit(8, 500), 2032);
  EXPECT_FALSE(should_lease(8, 500, 0, 0, 2032));
  EXPECT_TRUE(should_lease(8, 500, 0, 0, 2031));
  EXPECT_FALSE(should_lease(8, 0, 0, 0, 8)) << "without prefetch each holds its slot";
}

TEST(RefillTest, ABatchOfCompletionsInFlightDoesNotStopTheLeases) {
  // Short jobs: the completer records a whole capacity (508) while the handlers, done with
  // every leased job, finish no more. Stopping here left the server nothing but the
  // completion to run for its round trip.
  EXPECT_TRUE(should_lease(8, 500, 0, 0, 508));
  EXPECT_TRUE(should_overlap(8, 500, 254, 0, 508, 254, true));
  // Nor does one of one and a half capacities (762) with half a capacity finished beside
  // it: with a limit of twice the capacity, the fetchers stopped there (run 55).
  EXPECT_TRUE(should_lease(8, 500, 0, 0, 1016));
  EXPECT_TRUE(should_overlap(8, 500, 254, 0, 1016, 254, true));
}

TEST(RefillTest, WhileLeasesComeBackFullALeaseAsksForHalfTheCapacity) {
  // Two can then be in flight at once.
  EXPECT_EQ(lease_size(8, 500, true), 254);
  EXPECT_EQ(lease_size(1, 21, true), 11);
  EXPECT_EQ(lease_size(1, 1, true), 1);
  // The first lease, or after a short one: the whole capacity, so that the prefetch is
  // held in full whenever the jobs are there.
  EXPECT_EQ(lease_size(8, 500, false), 508);
  EXPECT_EQ(lease_size(1, 2, false), 3);
  EXPECT_EQ(lease_size(8, 0, true), 8)
      << "without prefetch, one fetcher leases for every free thread";
  EXPECT_FALSE(overlaps_leases(0));
  EXPECT_TRUE(overlaps_leases(1));
}

TEST(RefillTest, TheSecondFetcherLeasesOnlyBesideAFullLeaseInFlight) {
  // 8 threads, 500 ahead: leases of 254. The first fetcher's lease of 254 is in flight
  // (counted as unfinished), nothing else held: 254 slots are free.
  EXPECT_TRUE(should_overlap(8, 500, 254, 0, 0, 254, true));
  EXPECT_FALSE(should_overlap(8, 500, 254, 0, 0, 254, false))
      << "the last lease came back short: the queue is likely empty";
  EXPECT_FALSE(should_overlap(8, 500, 0, 0, 0, 0, true)) << "no lease in flight to overlap";
  EXPECT_FALSE(should_overlap(8, 500, 255, 0, 0, 254, true))
      << "less than a whole lease free: no crumbs";
  EXPECT_FALSE(should_overlap(8, 500, 254, 0, 2032, 254, true))
      << "four times the capacity of jobs wait for their settling call";
  EXPECT_FALSE(should_overlap(8, 0, 4, 0, 0, 4, true)) << "without prefetch, one fetcher";
}

}  // namespace
}  // namespace readpast::worker
