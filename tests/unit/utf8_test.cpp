// core/utf8.hpp: the one UTF-8 decoder every engine and the worker use.
#include "core/utf8.hpp"

#include <gtest/gtest.h>

#include <string>

namespace readpast::detail {
namespace {

TEST(Utf8, ValidatesWellFormedTextOnly) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_TRUE(is_valid_utf8(std::string("nul\0ok", 6)));
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("cut \xe2\x82"));
}

TEST(Utf8, SanitizingReplacesIllFormedBytesAndNul) {
  EXPECT_EQ(sanitize_utf8("a\xff"
                          "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(sanitize_utf8(std::string("a\0b", 3)),
            "a\xe2\x90\x80"
            "b");
  // A lone continuation byte is ill-formed wherever it stands.
  EXPECT_EQ(sanitize_utf8("\x82 rest"), "\xef\xbf\xbd rest");
  EXPECT_TRUE(is_valid_utf8(sanitize_utf8("\xc3\x28\xed\xa0\x80\xf8")));
}

TEST(Utf8, ACharacterCutAtTheStartIsDropped) {
  EXPECT_EQ(without_cut_character("\x82\xac rest"), " rest");
  EXPECT_EQ(without_cut_character("\xe2\x82\xac"), "\xe2\x82\xac");
  EXPECT_EQ(without_cut_character("\x82\xac"), "");
}

}  // namespace
}  // namespace readpast::detail
