// The URL tests' shorthand: a database URL parsed by the engine that claims it
// (core/url.hpp), failing the test when none does.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "core/url.hpp"

namespace readpast::test {

inline detail::DatabaseUrl must_parse(std::string_view url) {
  auto parsed = detail::parse_database_url(url);
  EXPECT_TRUE(parsed.has_value()) << "'" << url
                                  << "' was rejected: " << (parsed ? "" : parsed.error().message);
  return parsed.value_or(detail::DatabaseUrl{});
}

}  // namespace readpast::test
