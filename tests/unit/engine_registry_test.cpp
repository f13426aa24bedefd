// The engines of the build (engines/engine_registry.hpp): every engine registers its URL
// scheme and its opener under one name, in the order of READPAST_ENGINES; a URL is parsed
// by the engine that claims it, and one that no engine claims names what each would take.
#include "engines/engine_registry.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "support/engines.hpp"

namespace readpast::detail {
namespace {

TEST(EngineRegistry, EveryEngineHasOneSchemeAndOneOpenerOfTheSameName) {
  const auto schemes = registered_url_schemes();
  const auto engines = registered_engines();
  ASSERT_EQ(schemes.size(), engines.size());
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < schemes.size(); ++i) {
    EXPECT_EQ(schemes[i]->engine, engines[i]->name);
    EXPECT_TRUE(names.insert(engines[i]->name).second) << "twice: " << engines[i]->name;
    EXPECT_FALSE(schemes[i]->forms.empty());
  }
  // The shared suites run on exactly the engines of the build.
  std::set<std::string_view> tested;
  const auto fixtures = test::engines_under_test();
  for (const auto& engine : fixtures) tested.insert(engine.engine_name());
  EXPECT_EQ(tested, names);
}

TEST(EngineRegistry, AUrlGoesToTheEngineThatClaimsIt) {
  for (const auto& engine : test::engines_under_test()) {
    auto parsed = parse_database_url(engine.fresh_url());
    ASSERT_TRUE(parsed) << parsed.error().message;
    EXPECT_EQ(parsed->engine, engine.engine_name()) << engine.name;
  }
}

TEST(EngineRegistry, AUrlNoEngineClaimsNamesWhatEveryEngineTakes) {
  auto parsed = parse_database_url("oracle://scott:tiger@db/orcl");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.error().message.find("tiger"), std::string::npos);
  for (const UrlScheme* scheme : registered_url_schemes()) {
    EXPECT_NE(parsed.error().message.find(scheme->forms), std::string::npos) << scheme->engine;
  }
}

}  // namespace
}  // namespace readpast::detail
