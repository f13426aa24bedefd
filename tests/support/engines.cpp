#include "support/engines.hpp"

#include <stdexcept>

namespace readpast::test {

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const auto& engine : engines_under_test()) names.push_back(engine.name);
  return names;
}

const EngineUnderTest& engine_named(const std::string& name) {
  static const auto engines = engines_under_test();
  for (const auto& engine : engines) {
    if (engine.name == name) return engine;
  }
  throw std::invalid_argument("no engine named " + name);
}

}  // namespace readpast::test
