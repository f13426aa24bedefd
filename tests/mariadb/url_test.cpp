// MariaDB's URLs: mariadb:// and mysql://, their parts, and that a password never reaches the
// redacted form or any error message.
#include "core/url.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "readpast/queue.hpp"

namespace readpast::detail {
namespace {

constexpr std::string_view kSecret = "s3cr3tPW";

DatabaseUrl must_parse(std::string_view url) {
  auto parsed = parse_database_url(url);
  EXPECT_TRUE(parsed.has_value()) << "'" << url
                                  << "' was rejected: " << (parsed ? "" : parsed.error().message);
  return parsed.value_or(DatabaseUrl{});
}

TEST(MariadbUrl, TakesUserHostPortAndDatabase) {
  auto url = must_parse("mariadb://worker@db.example:3307/jobs");
  EXPECT_EQ(url.engine, "mariadb");
  EXPECT_EQ(url.params.at("user"), "worker");
  EXPECT_EQ(url.params.at("host"), "db.example");
  EXPECT_EQ(url.params.at("port"), "3307");
  EXPECT_EQ(url.params.at("database"), "jobs");
  EXPECT_FALSE(url.params.contains("password"));
  EXPECT_EQ(url.redacted, "mariadb://worker@db.example:3307/jobs");
}

TEST(MariadbUrl, MysqlSchemeIsTheSame) {
  auto url = must_parse("mysql://worker@127.0.0.1/jobs");
  EXPECT_EQ(url.engine, "mariadb");
  EXPECT_EQ(url.params.at("host"), "127.0.0.1");
  EXPECT_FALSE(url.params.contains("port"));
  EXPECT_EQ(url.params.at("database"), "jobs");
}

TEST(MariadbUrl, PasswordIsDecodedAndRedacted) {
  auto url = must_parse("mariadb://worker:" + std::string(kSecret) + "%40x@h/jobs");
  EXPECT_EQ(url.params.at("password"), std::string(kSecret) + "@x");
  EXPECT_EQ(url.redacted, "mariadb://worker:***@h/jobs");
  // A raw '@' in the password: the user info runs to the last '@'.
  auto raw = must_parse("mysql://worker:a@" + std::string(kSecret) + "@h:3306/jobs");
  EXPECT_EQ(raw.params.at("password"), "a@" + std::string(kSecret));
  EXPECT_EQ(raw.params.at("host"), "h");
  EXPECT_EQ(raw.redacted.find(kSecret), std::string::npos) << raw.redacted;
}

TEST(MariadbUrl, TakesItsTimeouts) {
  auto url = must_parse("mariadb://w@h/jobs?connect_timeout=3&reply_timeout=30s");
  EXPECT_EQ(url.params.at("connect_timeout"), "3");
  EXPECT_EQ(url.params.at("reply_timeout"), "30s");
  QueueOptions options;
  for (std::string_view bad : {"mariadb://w@127.0.0.1:1/jobs?reply_timeout=soon",
                               "mariadb://w@127.0.0.1:1/jobs?reply_timeout=0s",
                               "mariadb://w@127.0.0.1:1/jobs?reply_timeout=30",
                               "mariadb://w@127.0.0.1:1/jobs?connect_timeout=0",
                               "mariadb://w@127.0.0.1:1/jobs?connect_timeout=-1"}) {
    auto opened = Queue::open(bad, options);
    ASSERT_FALSE(opened.has_value()) << bad;
    EXPECT_EQ(opened.error().code, ErrorCode::kInvalidArgument) << opened.error().message;
  }
}

TEST(MariadbUrl, TakesASocketAndIPv6) {
  auto url = must_parse("mariadb://worker@localhost/jobs?socket=/run/mysqld/mysqld.sock");
  EXPECT_EQ(url.params.at("socket"), "/run/mysqld/mysqld.sock");
  auto no_host = must_parse("mariadb://worker@/jobs?socket=/tmp/s.sock");
  EXPECT_EQ(no_host.params.at("host"), "");
  auto v6 = must_parse("mariadb://worker@[::1]:3306/jobs");
  EXPECT_EQ(v6.params.at("host"), "::1");
  EXPECT_EQ(v6.params.at("port"), "3306");
}

TEST(MariadbUrl, RejectsWhatItCannotUseWithoutEchoingThePassword) {
  const std::string pw = ":" + std::string(kSecret) + "@";
  for (const std::string& text : std::vector<std::string>{
           "mariadb://u" + pw + "h", "mariadb://u" + pw + "h/", "mariadb://h/jobs",
           "mariadb://u" + pw + "h:0/jobs", "mariadb://u" + pw + "h:99999/jobs",
           "mariadb://u" + pw + "h:port/jobs", "mariadb://u" + pw + "h/jobs?sslmode=x",
           "mariadb://u" + pw + "h/a/b", "mariadb://u" + pw + "/jobs",
           "mysql://u" + pw + "h/jobs?x"}) {
    auto parsed = parse_database_url(text);
    ASSERT_FALSE(parsed.has_value()) << "accepted '" << text << "'";
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument) << text;
    EXPECT_EQ(parsed.error().message.find(kSecret), std::string::npos) << parsed.error().message;
  }
}

}  // namespace
}  // namespace readpast::detail
