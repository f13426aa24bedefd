// Lease tokens, job states and error-code names.
#include "readpast/job.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <span>
#include <string>

#include "core/lease_tokens.hpp"
#include "readpast/error.hpp"

namespace readpast {
namespace {

bool is_lower_hex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

TEST(LeaseToken, DefaultIsEmpty) {
  LeaseToken token;
  EXPECT_TRUE(token.empty());
  EXPECT_EQ(token.hex(), "");
}

TEST(LeaseToken, RandomIs32LowerCaseHexDigits) {
  auto token = LeaseToken::random();
  EXPECT_FALSE(token.empty());
  EXPECT_EQ(token.hex().size(), 32u);
  EXPECT_TRUE(is_lower_hex(token.hex())) << token.hex();
}

TEST(LeaseToken, RandomTokensAreDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 10000; ++i) {
    auto token = LeaseToken::random();
    ASSERT_TRUE(seen.insert(token.hex()).second) << "repeated token " << token.hex();
  }
  // Every hex digit shows up in each position over many draws: no constant nibble.
  for (std::size_t pos = 0; pos < 32; ++pos) {
    std::set<char> digits;
    for (const auto& hex : seen) digits.insert(hex[pos]);
    EXPECT_EQ(digits.size(), 16u) << "position " << pos;
  }
}

TEST(LeaseToken, HexIsEveryByteHighNibbleFirst) {
  const std::array<char, 16> bytes = {'\x00', '\x01', '\x7f', '\x80', '\xab', '\xff',
                                      '\x10', '\x0f', '\x00', '\x00', '\x00', '\x00',
                                      '\x00', '\x00', '\x00', '\x2a'};
  std::string hex(32, '?');
  detail::write_token_hex(bytes, std::span<char, 32>(hex));
  EXPECT_EQ(hex, "00017f80abff100f000000000000002a");
}

// The source SQLite's readpast_lease_token() draws from: refilled every 64 tokens, and no
// token repeats across the refills.
TEST(LeaseToken, ASourceHandsOutDistinctTokensAcrossRefills) {
  detail::LeaseTokenSource source;
  std::set<std::string> seen;
  for (int i = 0; i < 64 * 40 + 7; ++i) {
    std::string hex(32, '?');
    source.next_hex(std::span<char, 32>(hex));
    ASSERT_TRUE(is_lower_hex(hex)) << hex;
    ASSERT_TRUE(seen.insert(hex).second) << "token " << i << " repeated: " << hex;
  }
  for (std::size_t pos = 0; pos < 32; ++pos) {
    std::set<char> digits;
    for (const auto& hex : seen) digits.insert(hex[pos]);
    EXPECT_EQ(digits.size(), 16u) << "position " << pos;
  }
}

TEST(LeaseToken, FromHexRoundTrips) {
  auto token = LeaseToken::random();
  auto back = LeaseToken::from_hex(token.hex());
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, token);
}

TEST(LeaseToken, FromHexAcceptsUpperCaseAndStoresLowerCase) {
  auto token = LeaseToken::from_hex("0123456789ABCDEFabcdef0123456789");
  ASSERT_TRUE(token.has_value()) << token.error().message;
  EXPECT_EQ(token->hex(), "0123456789abcdefabcdef0123456789");
  EXPECT_EQ(*token, *LeaseToken::from_hex("0123456789abcdefabcdef0123456789"));
}

TEST(LeaseToken, FromHexRejectsAnythingButExactly32HexDigits) {
  using namespace std::string_view_literals;
  for (std::string_view text : {""sv, "0"sv, "0123456789abcdef0123456789abcde"sv,  // 31
                                "0123456789abcdef0123456789abcdef0"sv,             // 33
                                "0123456789abcdef0123456789abcdeg"sv,              // g
                                "0123456789abcdef 123456789abcdef"sv,              // space
                                " 0123456789abcdef0123456789abcdef"sv,             // leading space
                                "0x23456789abcdef0123456789abcdef"sv,              // prefix
                                "0123456789abcdef-0123456789abcde"sv,              // dash
                                "0123456789abcdef\0"
                                "123456789abcdef"sv,                          // NUL
                                "01234567-89ab-cdef-0123-456789abcdef"sv}) {  // UUID form
    auto token = LeaseToken::from_hex(text);
    EXPECT_FALSE(token.has_value()) << "accepted '" << text << "'";
    if (!token) {
      EXPECT_EQ(token.error().code, ErrorCode::kInvalidArgument);
    }
  }
}

TEST(JobState, NamesRoundTrip) {
  const std::pair<JobState, std::string_view> kNames[] = {{JobState::kAvailable, "available"},
                                                          {JobState::kRunning, "running"},
                                                          {JobState::kSucceeded, "succeeded"},
                                                          {JobState::kDead, "dead"},
                                                          {JobState::kCancelled, "cancelled"}};
  for (const auto& [state, name] : kNames) {
    EXPECT_EQ(to_string(state), name);
    EXPECT_EQ(parse_job_state(name), state) << name;
  }
}

TEST(JobState, ParseRejectsUnknownNames) {
  for (std::string_view text :
       {"", "scheduled", "retrying", "canceled", "done", "available ", "queued", "succeed"}) {
    EXPECT_EQ(parse_job_state(text), std::nullopt) << "'" << text << "'";
  }
}

TEST(JobState, FinishedStatesAreSucceededDeadAndCancelled) {
  EXPECT_FALSE(is_finished(JobState::kAvailable));
  EXPECT_FALSE(is_finished(JobState::kRunning));
  EXPECT_TRUE(is_finished(JobState::kSucceeded));
  EXPECT_TRUE(is_finished(JobState::kDead));
  EXPECT_TRUE(is_finished(JobState::kCancelled));
}

TEST(ErrorCode, HasStableDistinctNames) {
  EXPECT_EQ(to_string(ErrorCode::kLeaseLost), "lease_lost");
  EXPECT_EQ(to_string(ErrorCode::kInvalidArgument), "invalid_argument");
  std::set<std::string_view> names;
  for (ErrorCode code :
       {ErrorCode::kInvalidArgument, ErrorCode::kLeaseLost, ErrorCode::kNotFound,
        ErrorCode::kConflict, ErrorCode::kUnavailable, ErrorCode::kSchema, ErrorCode::kInternal}) {
    auto name = to_string(code);
    EXPECT_FALSE(name.empty());
    EXPECT_TRUE(names.insert(name).second) << "repeated name " << name;
    for (char c : name) EXPECT_TRUE((c >= 'a' && c <= 'z') || c == '_') << name;
  }
}

TEST(Error, PredicatesMatchTheirFactories) {
  EXPECT_TRUE(Error::lease_lost("x").is_lease_lost());
  EXPECT_FALSE(Error::not_found("x").is_lease_lost());
  EXPECT_TRUE(Error::unavailable("x").is_unavailable());
  EXPECT_FALSE(Error::internal("x").is_unavailable());
}

}  // namespace
}  // namespace readpast
