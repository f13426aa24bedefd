// The JSON arrays the MariaDB engine sends to JSON_TABLE (engines/mariadb/mariadb_json_array.hpp):
// separators at every depth, each kind of element, and the lease pair's shape. That MariaDB
// reads them is the conformance suite's (batched enqueue, settles, dependency rounds).
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "engines/mariadb/mariadb_json_array.hpp"

namespace readpast::detail::mariadb {
namespace {

TEST(MariadbJsonArray, EmptyIsAnEmptyArray) {
  JsonArray json;
  EXPECT_EQ(std::move(json).finish(), "[]");
}

TEST(MariadbJsonArray, NumbersAndPairsAreSeparatedAtEveryDepth) {
  JsonArray json;
  json.number(1).number(-9'223'372'036'854'775'807 - 1).pair(3, 4).pair(5, 6);
  EXPECT_EQ(std::move(json).finish(), "[1,-9223372036854775808,[3,4],[5,6]]");
}

TEST(MariadbJsonArray, RowsMixNullsPlainStringsAndHex) {
  JsonArray json;
  json.open().plain_string("mail.out").number(100).null().hex_string(std::string("\x00\xff a", 4));
  json.close();
  json.open().plain_string("q").hex_string("").close();
  EXPECT_EQ(std::move(json).finish(), R"([["mail.out",100,null,"00ff2061"],["q",""]])");
}

TEST(MariadbJsonArray, ALeaseIsItsIdAndItsTokensHex) {
  const LeaseToken token = LeaseToken::random();
  JsonArray json;
  json.lease(42, token).lease(43, token);
  EXPECT_EQ(std::move(json).finish(),
            "[[42,\"" + token.hex() + "\"],[43,\"" + token.hex() + "\"]]");
}

}  // namespace
}  // namespace readpast::detail::mariadb
