// When a writing SQLite connection attempts its WAL checkpoint
// (src/engines/sqlite/sqlite_checkpoint_pacer.hpp): as SQLite does while attempts move the
// checkpoint on; after one that moved nothing, only once the WAL has doubled or a pause in
// proportion to that attempt's cost has passed. On a made-up clock: no test here waits.
#include <gtest/gtest.h>

#include <chrono>

#include "engines/sqlite/sqlite_checkpoint_pacer.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;
using detail::sqlite::CheckpointPacer;
using Clock = CheckpointPacer::Clock;

constexpr int kThreshold = CheckpointPacer::kThresholdFrames;

class CheckpointPacerTest : public ::testing::Test {
 protected:
  // A commit that left `wal_frames` in the WAL, then the attempt it was due to make, which
  // found `checkpointed` of them checkpointed (-1: it failed) and took `took`; t_ is then
  // the attempt's end.
  void attempt(int wal_frames, int checkpointed, Clock::duration took = 1ms) {
    ASSERT_TRUE(pacer_.due(wal_frames, t_)) << "an attempt that was not due";
    const int log = checkpointed < 0 ? -1 : wal_frames;
    pacer_.attempted(log, checkpointed, t_, t_ + took);
    t_ += took;
  }
  CheckpointPacer pacer_;
  Clock::time_point t_ = Clock::time_point{} + 1h;
};

TEST_F(CheckpointPacerTest, NothingIsDueBelowSqlitesOwnThreshold) {
  EXPECT_FALSE(pacer_.due(0, t_));
  EXPECT_FALSE(pacer_.due(kThreshold - 1, t_));
  EXPECT_TRUE(pacer_.due(kThreshold, t_));
}

TEST_F(CheckpointPacerTest, WhileAttemptsMoveTheCheckpointOnEveryCommitPastTheThresholdAttempts) {
  attempt(kThreshold, kThreshold);  // caught up
  EXPECT_TRUE(pacer_.due(kThreshold + 1, t_));
  attempt(kThreshold + 500, kThreshold + 200);  // part of the way: a reader's mark
  EXPECT_TRUE(pacer_.due(kThreshold + 501, t_));
  attempt(kThreshold + 501, kThreshold + 300);
  EXPECT_FALSE(pacer_.paused());
  EXPECT_EQ(pacer_.attempts(), 3);
  EXPECT_EQ(pacer_.futile_attempts(), 0);
}

TEST_F(CheckpointPacerTest, AfterAnAttemptThatMovedNothingItWaitsForTheMinimumPause) {
  attempt(5000, 0);
  EXPECT_TRUE(pacer_.paused());
  EXPECT_EQ(pacer_.futile_attempts(), 1);
  EXPECT_FALSE(pacer_.due(5001, t_));
  EXPECT_FALSE(pacer_.due(9999, t_ + CheckpointPacer::kMinPause - 1ms));
  EXPECT_TRUE(pacer_.due(5001, t_ + CheckpointPacer::kMinPause));
}

TEST_F(CheckpointPacerTest, APausedPacerAttemptsOnceTheWalHasDoubled) {
  attempt(5000, 0);
  EXPECT_FALSE(pacer_.due(9999, t_ + 1ms));
  EXPECT_TRUE(pacer_.due(10000, t_ + 1ms));
}

TEST_F(CheckpointPacerTest, ThePauseGrowsWithWhatTheFutileAttemptCostUpToTheMaximum) {
  attempt(5000, 0, 50ms);  // 20 x 50 ms = 1 s
  EXPECT_FALSE(pacer_.due(5001, t_ + 999ms));
  EXPECT_TRUE(pacer_.due(5001, t_ + 1000ms));
  t_ += 1s;
  attempt(5001, 0, 2s);  // 40 s, capped
  EXPECT_FALSE(pacer_.due(5002, t_ + CheckpointPacer::kMaxPause - 1ms));
  EXPECT_TRUE(pacer_.due(5002, t_ + CheckpointPacer::kMaxPause));
}

TEST_F(CheckpointPacerTest, AnAttemptThatMovesAgainEndsThePause) {
  attempt(5000, 0);
  t_ += CheckpointPacer::kMinPause;
  attempt(6000, 0);  // the reader is still there
  EXPECT_TRUE(pacer_.paused());
  t_ += CheckpointPacer::kMinPause;
  attempt(7000, 7000);  // it has gone: caught up
  EXPECT_FALSE(pacer_.paused());
  EXPECT_TRUE(pacer_.due(7001, t_));
  EXPECT_EQ(pacer_.futile_attempts(), 2);
}

TEST_F(CheckpointPacerTest, AWalThatRestartedCountsAsProgress) {
  attempt(5000, 3000);
  attempt(5001, 3000);
  EXPECT_TRUE(pacer_.paused());
  t_ += CheckpointPacer::kMinPause;
  attempt(1200, 0);  // fewer frames than before: the WAL started over
  EXPECT_FALSE(pacer_.paused());
}

TEST_F(CheckpointPacerTest, AFailedAttemptPausesAndLeavesTheCountsAsTheyWere) {
  attempt(5000, 3000);
  attempt(5050, -1);
  EXPECT_TRUE(pacer_.paused());
  t_ += CheckpointPacer::kMinPause;
  attempt(5100, 3100);  // measured against the last good attempt: it moved
  EXPECT_FALSE(pacer_.paused());
}

}  // namespace
}  // namespace readpast::test
