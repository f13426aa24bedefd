// When a queue's fetcher leases more jobs (worker/refill.hpp).
#include "worker/refill.hpp"

#include <gtest/gtest.h>

namespace readpast::worker {
namespace {

TEST(RefillTest, WithoutPrefetchEveryFreeThreadGetsAJobAtOnce) {
  EXPECT_TRUE(should_lease(8, 0, 0, 0));
  EXPECT_TRUE(should_lease(8, 0, 7, 0)) << "one thread idle";
  EXPECT_FALSE(should_lease(8, 0, 8, 0)) << "every thread busy";
  EXPECT_TRUE(should_lease(1, 0, 0, 0));
  EXPECT_FALSE(should_lease(1, 0, 1, 0));
}

TEST(RefillTest, WithPrefetchShortJobsAreLeasedInLargeBatches) {
  // 8 threads, 500 ahead: 508 slots.
  EXPECT_TRUE(should_lease(8, 500, 0, 0));
  EXPECT_FALSE(should_lease(8, 500, 507, 499)) << "one slot free, plenty waiting: no lease of 1";
  EXPECT_FALSE(should_lease(8, 500, 255, 247)) << "under half free, enough waiting";
  EXPECT_TRUE(should_lease(8, 500, 254, 246)) << "half the capacity free";
  EXPECT_FALSE(should_lease(8, 500, 508, 500)) << "nothing free";
}

TEST(RefillTest, WithPrefetchThreadsAboutToIdleGetJobsWhateverIsFree) {
  // Long jobs: 8 running, fewer than 8 waiting: lease now, or a thread goes idle.
  EXPECT_TRUE(should_lease(8, 10, 15, 7));
  EXPECT_FALSE(should_lease(8, 10, 16, 8));
  EXPECT_FALSE(should_lease(8, 10, 18, 2)) << "nothing free";
}

}  // namespace
}  // namespace readpast::worker
