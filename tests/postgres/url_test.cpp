// The PostgreSQL engine's URLs (src/engines/postgres/pg_url.cpp): libpq's URI and keyword
// forms, readpast's own parameters taken out, and the password never in the redacted form.
#include "core/url.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "readpast/queue.hpp"
#include "support/url_parse.hpp"

namespace readpast::detail {
namespace {

constexpr std::string_view kSecret = "s3cr3tPW";

using test::must_parse;

TEST(DatabaseUrl, PostgresUriIsPassedToLibpqAndRedacted) {
  std::string text = "postgresql://worker:" + std::string(kSecret) + "@db.example:5432/jobs";
  auto url = must_parse(text);
  EXPECT_EQ(url.engine, "postgres");
  EXPECT_EQ(url.location, text);
  EXPECT_EQ(url.redacted, "postgresql://worker:***@db.example:5432/jobs");
  EXPECT_EQ(url.redacted.find(kSecret), std::string::npos);
}

TEST(DatabaseUrl, PostgresShortSchemeIsAccepted) {
  auto url = must_parse("postgres://u:" + std::string(kSecret) + "@h/db");
  EXPECT_EQ(url.engine, "postgres");
  EXPECT_EQ(url.redacted.find(kSecret), std::string::npos) << url.redacted;
}

TEST(DatabaseUrl, PostgresSchemaParameterIsReadpastsOwn) {
  auto url = must_parse("postgresql://u@h/db?sslmode=disable&schema=jobs&connect_timeout=5");
  EXPECT_EQ(url.params.at("schema"), "jobs");
  EXPECT_EQ(url.location.find("schema"), std::string::npos) << url.location;
  EXPECT_NE(url.location.find("sslmode=disable"), std::string::npos);
  EXPECT_NE(url.location.find("connect_timeout=5"), std::string::npos);
}

TEST(DatabaseUrl, PostgresReplyTimeoutParameterIsReadpastsOwn) {
  auto url = must_parse("postgresql://h/db?sslmode=disable&reply_timeout=30s&schema=s");
  EXPECT_EQ(url.location, "postgresql://h/db?sslmode=disable");
  EXPECT_EQ(url.params.at("reply_timeout"), "30s");
  EXPECT_EQ(url.params.at("schema"), "s");
  // A bad value is a bad URL, found before any connection is tried.
  for (const char* bad : {"postgresql://u:pw@127.0.0.1:1/db?reply_timeout=soon",
                          "postgresql://u:pw@127.0.0.1:1/db?reply_timeout=0s"}) {
    auto opened = Queue::open(bad);
    ASSERT_FALSE(opened.has_value()) << bad;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument) << opened.error().message;
    EXPECT_NE(opened.error().message.find("reply_timeout"), std::string::npos);
  }
}

TEST(DatabaseUrl, PostgresKeywordFormIsRedacted) {
  std::string text = "host=db.example password=" + std::string(kSecret) + " dbname=jobs";
  auto url = must_parse(text);
  EXPECT_EQ(url.engine, "postgres");
  EXPECT_EQ(url.location, text);
  EXPECT_EQ(url.redacted.find(kSecret), std::string::npos) << url.redacted;
  EXPECT_NE(url.redacted.find("host=db.example"), std::string::npos) << url.redacted;
  EXPECT_NE(url.redacted.find("dbname=jobs"), std::string::npos) << url.redacted;
}

// Issue 19's parameters: readpast's own, so libpq never sees them, and a bad value is a bad
// URL before any connection is tried.
TEST(DatabaseUrl, PostgresPoolerParametersAreReadpastsOwnAndChecked) {
  auto url = must_parse(
      "postgresql://u@h:6432/db?pool_mode=transaction&pool_size=3&"
      "poll_interval=250ms&sslmode=disable");
  EXPECT_EQ(url.location, "postgresql://u@h:6432/db?sslmode=disable");
  EXPECT_EQ(url.params.at("pool_mode"), "transaction");
  EXPECT_EQ(url.params.at("pool_size"), "3");
  EXPECT_EQ(url.params.at("poll_interval"), "250ms");
  for (const auto& [bad, named] : std::vector<std::pair<std::string, std::string>>{
           {"pool_mode=statement", "pool_mode"},
           {"pool_size=0", "pool_size"},
           {"pool_size=many", "pool_size"},
           {"pool_size=101", "pool_size"},
           {"poll_interval=0s", "poll_interval"},
           {"poll_interval=often", "poll_interval"},
           {"lease_lanes=sometimes", "lease_lanes"},
           {"listen_url=sqlite%3Ax.db", "listen_url"},
           {"listen_url=postgresql%3A%2F%2Fu%40127.0.0.1%3A1%2Fdb%3Fpool_mode%3Dtransaction",
            "listen_url"}}) {
    const std::string text = "postgresql://u:" + std::string(kSecret) + "@127.0.0.1:1/db?" + bad;
    auto opened = Queue::open(text);
    ASSERT_FALSE(opened.has_value()) << bad;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument) << opened.error().message;
    EXPECT_NE(opened.error().message.find(named), std::string::npos) << opened.error().message;
    EXPECT_EQ(opened.error().message.find(kSecret), std::string::npos) << opened.error().message;
  }
}

// listen_url is a URL inside a URL: its password is redacted too, and decoded for the
// engine.
TEST(DatabaseUrl, PostgresListenUrlIsDecodedAndItsPasswordRedacted) {
  const std::string listen =
      "postgresql%3A%2F%2Fw%3A" + std::string(kSecret) + "%40db.example%3A5432%2Fjobs";
  auto url =
      must_parse("postgresql://w@pooler:6432/jobs?pool_mode=transaction&listen_url=" + listen);
  EXPECT_EQ(url.params.at("listen_url"),
            "postgresql://w:" + std::string(kSecret) + "@db.example:5432/jobs");
  EXPECT_EQ(url.redacted.find(kSecret), std::string::npos) << url.redacted;
  EXPECT_NE(url.redacted.find("listen_url=postgresql://w:***@db.example:5432/jobs"),
            std::string::npos)
      << url.redacted;
  EXPECT_FALSE(parse_database_url("postgresql://h/db?listen_url=%zz").has_value());
}

}  // namespace
}  // namespace readpast::detail
