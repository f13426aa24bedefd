// When the PostgreSQL engine leases lane by lane (src/engines/postgres/lease_mode.hpp): the
// decision alone, from what the horizon probe and the head scans report, without a database.
// LeaseFrontierTest.LeasesTurnToTheLanesWhileAnotherSessionHoldsAnOldSnapshotAndBackAfter
// (lease_frontier_test.cpp) runs it against a server.
#include "engines/postgres/lease_mode.hpp"

#include <gtest/gtest.h>

namespace readpast::test {
namespace {

using detail::pg::LeaseLanes;
using detail::pg::LeaseMode;
using Change = LeaseMode::Change;
using namespace std::chrono_literals;

const auto t0 = std::chrono::steady_clock::time_point(1000s);

TEST(LeaseMode, TurnsOnOnceTheSameOldSnapshotHasStoodForASecond) {
  LeaseMode mode(LeaseLanes::kAuto);
  EXPECT_FALSE(mode.lanes("q"));
  EXPECT_EQ(mode.observe(5000, 42, t0), Change::kNone) << "not yet standing for kHeldFor";
  EXPECT_EQ(mode.observe(5000, 42, t0 + 500ms), Change::kNone);
  EXPECT_FALSE(mode.lanes("q"));
  EXPECT_EQ(mode.observe(5600, 42, t0 + 1s), Change::kOn);
  EXPECT_TRUE(mode.lanes("q"));
  EXPECT_EQ(mode.observe(6000, 42, t0 + 1500ms), Change::kNone) << "already on";
}

TEST(LeaseMode, StaysOffForShortTransactionsAndForAnOldSnapshotWithFewTransactionsSince) {
  LeaseMode mode(LeaseLanes::kAuto);
  // A busy database: the oldest snapshot is a different one at every probe.
  for (int i = 0; i < 10; ++i) mode.observe(5000, 100 + i * 5000, t0 + i * 500ms);
  EXPECT_FALSE(mode.lanes("q"));
  // A quiet one: an idle reader's snapshot stands, but little was written since.
  for (int i = 0; i < 10; ++i) mode.observe(LeaseMode::kHeldAge - 1, 7, t0 + 10s + i * 500ms);
  EXPECT_FALSE(mode.lanes("q"));
  // Nothing held at all.
  for (int i = 0; i < 10; ++i) mode.observe(0, std::nullopt, t0 + 20s + i * 500ms);
  EXPECT_FALSE(mode.lanes("q"));
}

TEST(LeaseMode, TurnsOffOnlyOnceAHeadScanAfterTheHolderEndedWasShort) {
  LeaseMode mode(LeaseLanes::kAuto);
  mode.observe(5000, 42, t0);
  ASSERT_EQ(mode.observe(5000, 42, t0 + 1s), Change::kOn);
  // A short head scan while the snapshot is still held says nothing.
  mode.head_scan_took(t0 + 2s, 1ms);
  EXPECT_TRUE(mode.lanes("q"));
  // The holder ends: the head is still full of what it kept.
  EXPECT_EQ(mode.observe(3, 9000, t0 + 3s), Change::kYoung);
  EXPECT_EQ(mode.observe(3, 9100, t0 + 3500ms), Change::kNone) << "said once";
  EXPECT_TRUE(mode.lanes("q"));
  mode.head_scan_took(t0 + 2900ms, 1ms);  // started before it ended
  EXPECT_TRUE(mode.lanes("q"));
  mode.head_scan_took(t0 + 4s, 800ms);  // vacuum has not caught up
  EXPECT_TRUE(mode.lanes("q"));
  mode.head_scan_took(t0 + 10s, 2ms);
  EXPECT_FALSE(mode.lanes("q"));
}

TEST(LeaseMode, AHolderThatComesBackBeforeTheHeadIsShortKeepsTheLanesOn) {
  LeaseMode mode(LeaseLanes::kAuto);
  mode.observe(5000, 42, t0);
  ASSERT_EQ(mode.observe(5000, 42, t0 + 1s), Change::kOn);
  ASSERT_EQ(mode.observe(3, 9000, t0 + 2s), Change::kYoung);
  EXPECT_EQ(mode.observe(4000, 9500, t0 + 3s), Change::kNone);  // another holder
  mode.head_scan_took(t0 + 4s, 2ms);
  EXPECT_TRUE(mode.lanes("q")) << "a short head scan under a new hold turned the lanes off";
}

TEST(LeaseMode, TurnsOnForALongHeadAndTriesTheHeadAgainLater) {
  LeaseMode mode(LeaseLanes::kAuto);
  EXPECT_EQ(mode.head_walked("q", LeaseMode::kLongHeadPages, 1, t0), Change::kNone);
  EXPECT_EQ(mode.head_walked("q", LeaseMode::kLongHeadPages + 1000 / 64, 1000, t0), Change::kNone)
      << "a large batch's own pages counted as a long head";
  EXPECT_FALSE(mode.lanes("q"));
  EXPECT_EQ(mode.head_walked("q", LeaseMode::kLongHeadPages + 1, 1, t0), Change::kOnForQueue);
  EXPECT_TRUE(mode.lanes("q"));
  EXPECT_EQ(mode.head_walked("q", 5000, 1, t0 + 1s), Change::kNone) << "already on";
  // Nothing is held: the probe turns the lanes off once kLongHeadFor has passed since it
  // turned them on, and the next long head turns them on again.
  EXPECT_EQ(mode.observe(0, std::nullopt, t0 + LeaseMode::kLongHeadFor - 1ms), Change::kNone);
  EXPECT_TRUE(mode.lanes("q"));
  EXPECT_EQ(mode.observe(0, std::nullopt, t0 + LeaseMode::kLongHeadFor), Change::kNone);
  EXPECT_FALSE(mode.lanes("q"));
  EXPECT_EQ(mode.head_walked("q", 2000, 1, t0 + LeaseMode::kLongHeadFor + 1s), Change::kOnForQueue);
  EXPECT_TRUE(mode.lanes("q"));
}

TEST(LeaseMode, ALongHeadTurnsTheLanesOnForItsQueueAlone) {
  LeaseMode mode(LeaseLanes::kAuto);
  ASSERT_EQ(mode.head_walked("busy", 1000, 100, t0), Change::kOnForQueue);
  EXPECT_TRUE(mode.lanes("busy"));
  EXPECT_FALSE(mode.lanes("quiet")) << "a quiet queue's clean head is cheaper than its lanes";
  EXPECT_EQ(mode.head_walked("quiet", 3, 1, t0 + 1s), Change::kNone);
  EXPECT_FALSE(mode.lanes("quiet"));
  // A second queue's own long head, later: each tries its head again at its own time.
  ASSERT_EQ(mode.head_walked("quiet", 900, 1, t0 + 10s), Change::kOnForQueue);
  mode.observe(0, std::nullopt, t0 + LeaseMode::kLongHeadFor);
  EXPECT_FALSE(mode.lanes("busy"));
  EXPECT_TRUE(mode.lanes("quiet"));
  mode.observe(0, std::nullopt, t0 + 10s + LeaseMode::kLongHeadFor);
  EXPECT_FALSE(mode.lanes("quiet"));
}

TEST(LeaseMode, AHoldKeepsTheLanesOnPastTheLongHeadsTimeAndALongHeadPastTheHold) {
  LeaseMode mode(LeaseLanes::kAuto);
  ASSERT_EQ(mode.head_walked("q", 1000, 1, t0), Change::kOnForQueue);
  EXPECT_EQ(mode.observe(5000, 42, t0 + 1s), Change::kNone);
  // On for every queue now; q's lanes were on already, and it keeps its frontiers.
  EXPECT_EQ(mode.observe(5000, 42, t0 + 2s), Change::kOn);
  EXPECT_TRUE(mode.long_head("q"));
  EXPECT_FALSE(mode.long_head("other"));
  EXPECT_TRUE(mode.lanes("other"));
  EXPECT_EQ(mode.observe(9000, 42, t0 + LeaseMode::kLongHeadFor + 1s), Change::kNone);
  EXPECT_TRUE(mode.lanes("q")) << "the long head's time ended the lanes under a hold";
  // The holder ends and the head is short: off.
  EXPECT_EQ(mode.observe(3, 9000, t0 + LeaseMode::kLongHeadFor + 2s), Change::kYoung);
  mode.head_scan_took(t0 + LeaseMode::kLongHeadFor + 3s, 1ms);
  EXPECT_FALSE(mode.lanes("q"));

  // A long head found while the lanes were off stays on for its time after a hold ends.
  LeaseMode other(LeaseLanes::kAuto);
  other.observe(5000, 42, t0);
  ASSERT_EQ(other.observe(5000, 42, t0 + 1s), Change::kOn);
  ASSERT_EQ(other.observe(3, 9000, t0 + 2s), Change::kYoung);
  EXPECT_EQ(other.head_walked("q", 1000, 1, t0 + 2500ms), Change::kNone) << "on already";
  other.head_scan_took(t0 + 3s, 1ms);
  EXPECT_TRUE(other.lanes("q")) << "a short head scan ended the lanes a long head turned on";
  other.observe(3, 9100, t0 + 2500ms + LeaseMode::kLongHeadFor);
  EXPECT_FALSE(other.lanes("q"));
}

TEST(LeaseMode, AlwaysAndNeverDoNotProbe) {
  LeaseMode always(LeaseLanes::kAlways), never(LeaseLanes::kNever);
  EXPECT_TRUE(always.lanes("q"));
  EXPECT_FALSE(never.lanes("q"));
  EXPECT_FALSE(always.claim_probe(t0));
  EXPECT_FALSE(never.claim_probe(t0));
  always.head_scan_took(t0, 1ms);
  EXPECT_TRUE(always.lanes("q"));
  EXPECT_EQ(never.head_walked("q", 100000, 1, t0), Change::kNone);
  EXPECT_FALSE(never.lanes("q"));
}

TEST(LeaseMode, OneCallerProbesPerInterval) {
  LeaseMode mode(LeaseLanes::kAuto);
  EXPECT_TRUE(mode.claim_probe(t0));
  EXPECT_FALSE(mode.claim_probe(t0 + 100ms));
  EXPECT_TRUE(mode.claim_probe(t0 + LeaseMode::kProbeEvery));
}

TEST(LeaseMode, TheUrlParameterTakesThreeValues) {
  EXPECT_EQ(*detail::pg::parse_lease_lanes("auto"), LeaseLanes::kAuto);
  EXPECT_EQ(*detail::pg::parse_lease_lanes("always"), LeaseLanes::kAlways);
  EXPECT_EQ(*detail::pg::parse_lease_lanes("never"), LeaseLanes::kNever);
  EXPECT_FALSE(detail::pg::parse_lease_lanes("sometimes").has_value());
}

}  // namespace
}  // namespace readpast::test
