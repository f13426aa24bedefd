#include "support/engines.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>

#include "support/postgres_server.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

std::string fresh_sqlite_url() {
  // One directory for the whole test program, removed at exit; a new file per call.
  static const auto dir = std::make_unique<TempDir>();
  static std::atomic<int> counter{0};
  return "sqlite:" + dir->file("db-" + std::to_string(counter++) + ".sqlite");
}

}  // namespace

std::vector<EngineUnderTest> engines_under_test() {
  return {
      {"sqlite", fresh_sqlite_url},
      {"postgres", [] { return PostgresServer::shared().fresh_database_url(); }},
  };
}

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
