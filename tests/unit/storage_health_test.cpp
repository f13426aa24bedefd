// The storage's health as the operator reads it: the Prometheus series (core/prometheus.hpp),
// the holder's line (core/snapshot_holder_text.hpp) and when the worker warns about it
// (worker/snapshot_watch.hpp).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/prometheus.hpp"
#include "core/snapshot_holder_text.hpp"
#include "worker/snapshot_watch.hpp"

namespace readpast {
namespace {

using namespace std::chrono_literals;

SnapshotHolder holder(std::string kind, std::optional<std::int64_t> pid, std::string client,
                      std::string state, std::optional<Duration> age,
                      std::optional<std::int64_t> transactions) {
  SnapshotHolder h;
  h.kind = std::move(kind);
  h.pid = pid;
  h.client = std::move(client);
  h.state = std::move(state);
  h.age = age;
  h.transactions = transactions;
  return h;
}

SnapshotHolder idle_session(Duration age) {
  return holder("session", 4242, "psql", "idle in transaction", age, 120034);
}

StorageHealth held_by(SnapshotHolder h) {
  StorageHealth health;
  health.oldest_snapshot = std::move(h);
  return health;
}

TEST(StorageHealthText, EveryTableHasItsSizeAndTheHolderItsAgeAndTransactions) {
  StorageHealth health = held_by(idle_session(372500ms));
  health.sizes = {{"live", 1114112}, {"running_0", 8192}};
  const std::string text = detail::prometheus_storage_text(health);
  EXPECT_NE(text.find("# TYPE readpast_storage_bytes gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("readpast_storage_bytes{relation=\"live\"} 1114112\n"), std::string::npos);
  EXPECT_NE(text.find("readpast_storage_bytes{relation=\"running_0\"} 8192\n"), std::string::npos);
  EXPECT_NE(text.find("readpast_oldest_snapshot_age_seconds 372.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("readpast_oldest_snapshot_transactions 120034\n"), std::string::npos);
}

TEST(StorageHealthText, WhatTheDatabaseDoesNotSayIsLeftOut) {
  // SQLite: sizes only. A walsender's feedback: transactions but no age.
  StorageHealth sqlite;
  sqlite.sizes = {{"database", 4096}, {"wal", 0}};
  const std::string text = detail::prometheus_storage_text(sqlite);
  EXPECT_NE(text.find("readpast_storage_bytes{relation=\"wal\"} 0\n"), std::string::npos);
  EXPECT_EQ(text.find("readpast_oldest_snapshot"), std::string::npos) << text;

  const StorageHealth standby = held_by(holder("session", std::nullopt, "", "", std::nullopt, 9));
  const std::string feedback = detail::prometheus_storage_text(standby);
  EXPECT_EQ(feedback.find("readpast_oldest_snapshot_age_seconds"), std::string::npos);
  EXPECT_NE(feedback.find("readpast_oldest_snapshot_transactions 9\n"), std::string::npos);
}

TEST(StorageHealthText, TheHolderInOneLine) {
  EXPECT_EQ(detail::snapshot_holder_text(idle_session(372500ms)),
            "session 4242 (psql, idle in transaction), open for 6m12s, 120034 transactions ago");
  EXPECT_EQ(detail::snapshot_holder_text(holder("replication slot", std::nullopt, "standby_1",
                                                "inactive", std::nullopt, 77)),
            "replication slot (standby_1, inactive), 77 transactions ago");
  EXPECT_EQ(
      detail::snapshot_holder_text(holder("connection", 17, "", "", std::nullopt, std::nullopt)),
      "connection 17");
}

TEST(StorageHealthText, TheHolderAsLogFieldsHasWhatIsKnown) {
  using Fields = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(detail::snapshot_holder_fields(idle_session(372500ms)),
            (Fields{{"kind", "session"},
                    {"pid", "4242"},
                    {"client", "psql"},
                    {"state", "idle in transaction"},
                    {"age_seconds", "372"},
                    {"transactions", "120034"}}));
  EXPECT_EQ(
      detail::snapshot_holder_fields(holder("connection", 17, "", "", std::nullopt, std::nullopt)),
      (Fields{{"kind", "connection"}, {"pid", "17"}}));
}

TEST(SnapshotWatch, WarnsOnceTheHolderIsOldEnoughNamingIt) {
  worker::SnapshotWatch watch(1min);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(watch.observe(StorageHealth{}, t0));
  EXPECT_FALSE(watch.observe(held_by(idle_session(59s)), t0));
  auto warning = watch.observe(held_by(idle_session(60s)), t0);
  ASSERT_TRUE(warning);
  EXPECT_EQ(warning->rfind("a snapshot held by session 4242 (psql, idle in transaction), open "
                           "for 1m, ",
                           0),
            0u)
      << *warning;
  EXPECT_NE(warning->find("end that transaction"), std::string::npos);
}

TEST(SnapshotWatch, AHolderOfUnknownAgeCountsFromWhenItWasFirstSeen) {
  worker::SnapshotWatch watch(1min);
  const auto t0 = std::chrono::steady_clock::now();
  const StorageHealth walsender = held_by(holder("session", 7, "", "", std::nullopt, 5));
  const StorageHealth other = held_by(holder("session", 8, "", "", std::nullopt, 5));
  EXPECT_FALSE(watch.observe(walsender, t0));
  EXPECT_FALSE(watch.observe(walsender, t0 + 59s));
  auto warning = watch.observe(walsender, t0 + 61s);
  ASSERT_TRUE(warning);
  EXPECT_NE(warning->find("seen for at least 1m1s"), std::string::npos) << *warning;
  // Another holder starts the count again, and so does a turn that found none.
  EXPECT_FALSE(watch.observe(other, t0 + 62s));
  EXPECT_FALSE(watch.observe(StorageHealth{}, t0 + 200s));
  EXPECT_FALSE(watch.observe(other, t0 + 201s));
  EXPECT_TRUE(watch.observe(other, t0 + 262s));
}

}  // namespace
}  // namespace readpast
