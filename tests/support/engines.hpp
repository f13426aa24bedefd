// The engines the shared suites (conformance, multi-process) run against.
// Adding an engine is one line in engines.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace readpast::test {

struct EngineUnderTest {
  std::string name;  // "sqlite", "postgres": used in test names
  // Returns the URL of a fresh database without a schema, distinct on every call, that
  // lives until the end of the test program.
  std::function<std::string()> fresh_url;
};

// Every engine whose server can run here. PostgreSQL starts (once per test program) a
// real server in a temporary directory; see postgres_server.hpp.
std::vector<EngineUnderTest> engines_under_test();

// The names, for INSTANTIATE_TEST_SUITE_P.
std::vector<std::string> engine_names();
const EngineUnderTest& engine_named(const std::string& name);

}  // namespace readpast::test
