// %XX escapes: decoded as libpq and HTTP decode them, malformed ones refused.
#include "core/percent_decode.hpp"

#include <gtest/gtest.h>

namespace readpast::detail {
namespace {

TEST(PercentDecode, DecodesEscapesInEitherCase) {
  EXPECT_EQ(percent_decode("p%40ss%2fw%2F"), "p@ss/w/");
  EXPECT_EQ(percent_decode("plain"), "plain");
  EXPECT_EQ(percent_decode(""), "");
  EXPECT_EQ(percent_decode("%00"), std::string(1, '\0'));
  EXPECT_EQ(percent_decode("a+b"), "a+b");
  EXPECT_EQ(percent_decode("a+b%2B", /*plus_is_space=*/true), "a b+");
}

TEST(PercentDecode, RefusesAPercentWithoutTwoHexDigits) {
  for (const char* text : {"50%", "50%o", "50%off", "%g0", "%0g"}) {
    EXPECT_EQ(percent_decode(text), std::nullopt) << text;
  }
  EXPECT_EQ(hex_digit_value('7'), 7);
  EXPECT_EQ(hex_digit_value('b'), 11);
  EXPECT_EQ(hex_digit_value('F'), 15);
  EXPECT_EQ(hex_digit_value('g'), -1);
}

}  // namespace
}  // namespace readpast::detail
