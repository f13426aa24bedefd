// Database URLs: which engine, the SQLite path and parameters, and that a password never
// reaches the redacted form or any error message.
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

TEST(DatabaseUrl, SqliteTakesAPath) {
  auto url = must_parse("sqlite:/var/lib/jobs.db");
  EXPECT_EQ(url.engine, "sqlite");
  EXPECT_EQ(url.location, "/var/lib/jobs.db");
  EXPECT_TRUE(url.params.empty());
  EXPECT_EQ(url.redacted, "sqlite:/var/lib/jobs.db");
}

TEST(DatabaseUrl, SqliteTakesARelativePath) {
  auto url = must_parse("sqlite:readpast.db");
  EXPECT_EQ(url.engine, "sqlite");
  EXPECT_EQ(url.location, "readpast.db");
}

TEST(DatabaseUrl, SqliteTakesItsParameters) {
  auto url = must_parse("sqlite:jobs.db?synchronous=normal");
  EXPECT_EQ(url.location, "jobs.db");
  ASSERT_EQ(url.params.count("synchronous"), 1u);
  EXPECT_EQ(url.params.at("synchronous"), "normal");

  auto both = must_parse("sqlite:/tmp/j.db?synchronous=normal&busy_timeout=5000");
  EXPECT_EQ(both.location, "/tmp/j.db");
  EXPECT_EQ(both.params.at("synchronous"), "normal");
  EXPECT_EQ(both.params.at("busy_timeout"), "5000");
  auto cache = must_parse("sqlite:j.db?cache_mib=64");
  EXPECT_EQ(cache.params.at("cache_mib"), "64");
}

TEST(DatabaseUrl, SqliteRejectsUnknownOrMalformedParameters) {
  for (std::string_view text : {"sqlite:jobs.db?journal_mode=delete", "sqlite:jobs.db?synchronous",
                                "sqlite:jobs.db?=normal", "sqlite:jobs.db?synchronous=normal&x=1",
                                "sqlite:jobs.db?password=x"}) {
    auto parsed = parse_database_url(text);
    EXPECT_FALSE(parsed.has_value()) << "accepted '" << text << "'";
    if (!parsed) {
      EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

// Found by the fuzz_url target: the printable form of a sqlite: URL was the URL itself.
TEST(DatabaseUrl, SqliteUrlsAreRedactedToo) {
  auto bad = parse_database_url("sqlite:jobs.db?password=" + std::string(kSecret));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message.find(kSecret), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("password=***"), std::string::npos) << bad.error().message;
}

// Issue 17: taken as a path, the user info of "sqlite://u:SECRET@/path" was echoed by
// "database file 'u:SECRET@/path' does not exist".
TEST(DatabaseUrl, SqliteUrlsTakeNoUserOrPassword) {
  for (const std::string& text : {"sqlite://u:" + std::string(kSecret) + "@/path",
                                  "sqlite://user:" + std::string(kSecret) + "@host/x.db"}) {
    auto parsed = parse_database_url(text);
    ASSERT_FALSE(parsed.has_value()) << "accepted '" << text << "'";
    EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(parsed.error().message.find(kSecret), std::string::npos) << parsed.error().message;
  }
  EXPECT_EQ(parse_database_url("sqlite://u:" + std::string(kSecret) + "@/path").error().message,
            "bad URL 'sqlite://u:***@/path': a sqlite: URL takes no user or password");
  // A path that merely holds ':' and '@' is still a path.
  EXPECT_EQ(must_parse("sqlite:///data/a:b@c.db").location, "/data/a:b@c.db");
  EXPECT_EQ(must_parse("sqlite:rel:dir@x/y.db").location, "rel:dir@x/y.db");
}

TEST(DatabaseUrl, SqliteNeedsAPath) {
  for (std::string_view text : {"sqlite:", "sqlite:?synchronous=normal"}) {
    auto parsed = parse_database_url(text);
    EXPECT_FALSE(parsed.has_value()) << "accepted '" << text << "'";
  }
}

TEST(DatabaseUrl, RejectsUnknownSchemesAndGarbage) {
  for (std::string_view text :
       {"", "readpast.db", "mssql://u@h/db", "http://example.com", "sqlite3:/x.db", "SQLITE",
        "/tmp/readpast.db", "postgresql", "::"}) {
    auto parsed = parse_database_url(text);
    EXPECT_FALSE(parsed.has_value()) << "accepted '" << text << "'";
    if (!parsed) {
      EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
      EXPECT_FALSE(parsed.error().message.empty());
    }
  }
}

TEST(RedactUrl, HidesEveryFormOfPassword) {
  const std::string secret(kSecret);
  for (std::string text : {
           "postgresql://u:" + secret + "@h/db",
           "postgresql://u:" + secret + "@h:5432/db?sslmode=require",
           "postgresql://u:" + secret + "@h",
           "postgres://u:" + secret + "@h/db",
           "postgresql://u:pre" + secret + ":post@h/db",
           "postgresql://h/db?password=" + secret,
           "postgresql://h/db?sslmode=require&password=" + secret + "&application_name=x",
           "host=h password=" + secret + " dbname=db",
           "host=h password = " + secret + " dbname=db",
           "password=" + secret,
           "host=h password='" + secret + " with space' dbname=db",
           "host=h PASSWORD=" + secret,
       }) {
    std::string redacted = redact_url(text);
    EXPECT_EQ(redacted.find(kSecret), std::string::npos) << text << " -> " << redacted;
    EXPECT_EQ(redacted.find("with space"), std::string::npos) << text << " -> " << redacted;
    auto parsed = parse_database_url(text);
    if (parsed) {
      EXPECT_EQ(parsed->redacted.find(kSecret), std::string::npos) << parsed->redacted;
    } else {
      EXPECT_EQ(parsed.error().message.find(kSecret), std::string::npos) << parsed.error().message;
    }
  }
}

// Issue 17: the password ended at its first '@', so the rest of it was printed.
TEST(RedactUrl, APasswordRunsToTheLastAtOfTheAuthority) {
  EXPECT_EQ(redact_url("postgresql://u:pa@ss:SECRET@host/db"), "postgresql://u:***@host/db");
  EXPECT_EQ(redact_url("postgres://u:a@b@c@host:5432/db?sslmode=require"),
            "postgres://u:***@host:5432/db?sslmode=require");
  EXPECT_EQ(redact_url("sqlite://u:SECRET@/path"), "sqlite://u:***@/path");
  EXPECT_EQ(redact_url("mariadb://u:pa@ss:SECRET@h/db"), "mariadb://u:***@h/db");
  EXPECT_EQ(redact_url("mysql://u:SECRET@h"), "mysql://u:***@h");
  // A user name with a raw '@' (hosted services name users "admin@server").
  EXPECT_EQ(redact_url("postgresql://admin@server:SECRET@server.example.com/db"),
            "postgresql://admin@server:***@server.example.com/db");
  // libpq takes '?' and '#' into a password; a raw '/' makes it read a port instead,
  // which a "bad port" message would echo.
  EXPECT_EQ(redact_url("postgresql://u:pa?ss#SECRET@host/db"), "postgresql://u:***@host/db");
  EXPECT_EQ(redact_url("postgresql://u:pa/SECRET@host/db"), "postgresql://u:***@host/db");
  for (std::string_view text : {"postgresql://u:pa@ss:SECRET@host/db",
                                "mysql://u:pa@ss:SECRET@h/db", "mariadb://u:pa@ss:SECRET@h/db",
                                "sqlite://u:SECRET@/path", "postgresql://u:pa/SECRET@host/db",
                                "postgresql://admin@server:SECRET@server.example.com/db"}) {
    auto parsed = parse_database_url(text);
    const std::string& shown = parsed ? parsed->redacted : parsed.error().message;
    EXPECT_EQ(shown.find("SECRET"), std::string::npos) << text << " -> " << shown;
    if (parsed) {
      auto opened = Queue::open(text);
      ASSERT_FALSE(opened.has_value()) << text;
      EXPECT_EQ(opened.error().message.find("SECRET"), std::string::npos) << opened.error().message;
    }
  }
}

TEST(RedactUrl, LeavesUrlsWithoutPasswordsAlone) {
  for (std::string_view text :
       {"sqlite:/tmp/x.db", "sqlite:x.db?synchronous=normal", "postgresql://u@h:5432/db",
        "host=h dbname=db user=u", "postgresql://h:5432/db@x", "postgresql://h1:5432,h2:5433/db",
        "postgresql://h/db?application_name=a@b", "postgresql://u@h/db?sslmode=require"}) {
    EXPECT_EQ(redact_url(text), text);
  }
}

TEST(UrlPasswords, AreFoundAsWrittenAndAsLibpqReadsThem) {
  EXPECT_EQ(url_passwords("postgresql://u@h/db"), std::vector<std::string>{});
  EXPECT_EQ(url_passwords("postgresql://u:pa@ss:SECRET@host/db"),
            std::vector<std::string>{"pa@ss:SECRET"});
  EXPECT_EQ(url_passwords("postgresql://u:p%40ss%2Fw@h/db"),
            (std::vector<std::string>{"p@ss/w", "p%40ss%2Fw"}));
  // libpq refuses a malformed escape; what is written is all there is.
  EXPECT_EQ(url_passwords("postgresql://u:50%off@h/db"), std::vector<std::string>{"50%off"});
  EXPECT_EQ(url_passwords("postgresql://h/db?sslmode=require&password=x%41y&a=1"),
            (std::vector<std::string>{"xAy", "x%41y"}));
  // libpq reads password='sec \' ret \\ x' as: sec ' ret \ x
  EXPECT_EQ(url_passwords(R"(host=h password='sec \' ret \\ x' sslpassword=k3y dbname=d)"),
            (std::vector<std::string>{R"(sec ' ret \ x)", "k3y"}));
  EXPECT_EQ(url_passwords("host=h PASSWORD = s3cret"), std::vector<std::string>{"s3cret"});
}

TEST(UrlWithoutPassword, LeavesAWorkingUrl) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"postgresql://u:SECRET@h:5432/db", "postgresql://u@h:5432/db"},
      {"postgresql://u:pa@ss:SECRET@host/db", "postgresql://u@host/db"},
      {"postgresql://u@h/db", "postgresql://u@h/db"},
      {"postgresql://h/db?password=SECRET", "postgresql://h/db"},
      {"postgresql://h/db?password=SECRET&sslmode=require", "postgresql://h/db?sslmode=require"},
      {"postgresql://h/db?sslmode=require&password=SECRET", "postgresql://h/db?sslmode=require"},
      {"postgresql://h/db?a=1&password=SECRET&b=2", "postgresql://h/db?a=1&b=2"},
      {"postgresql://u:X@h/db?password=Y&sslpassword=Z", "postgresql://u@h/db"},
      {"host=h password=SECRET dbname=db", "host=h dbname=db"},
      {"host=h dbname=db password = 'SEC RET'", "host=h dbname=db"},
      {"password=SECRET host=h", "host=h"},
      {"password=SECRET", ""},
      {"sqlite:/tmp/x.db", "sqlite:/tmp/x.db"},
  };
  for (const auto& [url, expected] : cases) {
    EXPECT_EQ(url_without_password(url), expected) << url;
    if (!expected.empty()) {
      EXPECT_EQ(redact_url(expected), expected) << "a password is left in " << expected;
    }
  }
}

TEST(RedactUrl, ErrorsNeverEchoAPassword) {
  const std::string secret(kSecret);
  for (std::string text : {"mssql://u:" + secret + "@h/db", "bogus://u:" + secret + "@h/db",
                           "mariadb://u:" + secret + "@h"}) {
    auto parsed = parse_database_url(text);
    ASSERT_FALSE(parsed.has_value()) << "accepted '" << text << "'";
    EXPECT_EQ(parsed.error().message.find(kSecret), std::string::npos) << parsed.error().message;
  }
}

TEST(RedactUrl, OpeningAnUnreachableServerNeverEchoesThePassword) {
  // Port 1 on the loopback refuses at once; whatever fails (the connection, or an engine
  // that is not built), the message must not carry the password.
  const std::string secret(kSecret);
  for (std::string text :
       {"postgresql://u:" + secret + "@127.0.0.1:1/db?connect_timeout=2",
        "host=127.0.0.1 port=1 user=u password=" + secret + " dbname=db connect_timeout=2"}) {
    auto queue = Queue::open(text);
    ASSERT_FALSE(queue.has_value());
    EXPECT_EQ(queue.error().message.find(kSecret), std::string::npos) << queue.error().message;
    EXPECT_FALSE(queue.error().message.empty());
  }
}

}  // namespace
}  // namespace readpast::detail
