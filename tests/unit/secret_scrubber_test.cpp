// SecretScrubber: known secrets (a database password, a token) taken out of text, whole
// or arriving in pieces.
#include "core/secret_scrubber.hpp"

#include <gtest/gtest.h>

#include <string>

namespace readpast::detail {
namespace {

TEST(SecretScrubber, ReplacesEveryOccurrence) {
  SecretScrubber scrubber;
  scrubber.add("s3cr3tPW");
  scrubber.add("tok-123");
  EXPECT_EQ(scrubber.scrub("PGPASSWORD=s3cr3tPW x=s3cr3tPWs3cr3tPW tok-123."),
            "PGPASSWORD=[redacted] x=[redacted][redacted] [redacted].");
  EXPECT_EQ(scrubber.scrub("nothing to see"), "nothing to see");
  EXPECT_EQ(scrubber.scrub(""), "");
}

TEST(SecretScrubber, IgnoresSecretsTooShortToScrub) {
  SecretScrubber scrubber;
  scrubber.add("");
  scrubber.add("abc");
  EXPECT_TRUE(scrubber.empty());
  EXPECT_EQ(scrubber.scrub("abcabc"), "abcabc");
  scrubber.add("abcd");
  EXPECT_EQ(scrubber.scrub("abcabcd"), "abc[redacted]");
}

TEST(SecretScrubber, ALongerSecretWinsOverOneItContains) {
  SecretScrubber scrubber;
  scrubber.add("pass");
  scrubber.add("password123");
  // Either way round, nothing of the longer one is left.
  EXPECT_EQ(scrubber.scrub("a password123 b pass"), "a [redacted] b [redacted]");
  SecretScrubber other;
  other.add("password123");
  other.add("pass");
  EXPECT_EQ(other.scrub("password123"), "[redacted]");
}

TEST(SecretScrubber, TakesTheDecodedFormOfAUrlPasswordToo) {
  SecretScrubber scrubber;
  scrubber.add_url_passwords("postgresql://u:p%40ss%2Fword@h/db");
  EXPECT_EQ(scrubber.scrub("p@ss/word and p%40ss%2Fword"), "[redacted] and [redacted]");
  SecretScrubber keywords;
  keywords.add_url_passwords("host=h password='sec ret' dbname=d");
  EXPECT_EQ(keywords.scrub("PGPASSWORD=sec ret"), "PGPASSWORD=[redacted]");
  SecretScrubber none;
  none.add_url_passwords("sqlite:jobs.db");
  EXPECT_TRUE(none.empty());
}

// A secret cut in two by a read() boundary is held back until the next piece completes it.
TEST(SecretScrubber, ScrubsTextThatArrivesInPieces) {
  SecretScrubber scrubber;
  scrubber.add("s3cr3tPW");
  const std::string text = "one s3cr3tPW two s3cr3tPW three s3cr";
  // Every way to cut the text in two pieces.
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    std::string out;
    std::string pending = text.substr(0, cut);
    pending.erase(0, scrubber.scrub_prefix(pending, out));
    out += scrubber.scrub(pending + text.substr(cut));
    EXPECT_EQ(out, "one [redacted] two [redacted] three s3cr") << "cut at " << cut;
  }
  // Only a possible beginning of a secret is held back.
  std::string out;
  EXPECT_EQ(scrubber.scrub_prefix("abc s3c", out), 4u);
  EXPECT_EQ(out, "abc ");
  out.clear();
  EXPECT_EQ(scrubber.scrub_prefix("abc s3x", out), 7u);
  EXPECT_EQ(out, "abc s3x");
}

}  // namespace
}  // namespace readpast::detail
