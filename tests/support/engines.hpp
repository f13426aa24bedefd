// The engines the shared suites (conformance, multi-process, worker, server, chaos) run
// against: every engine of the build (READPAST_ENGINES). Each engine has a fixture,
// support/engines/<name>.cpp defining `EngineUnderTest <name>_under_test()`, and
// tests/CMakeLists.txt generates engines_under_test() from the list.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace readpast::test {

struct EngineUnderTest {
  // The name and fresh_url; the hooks below stay empty unless the fixture sets them.
  EngineUnderTest(std::string engine_name, std::function<std::string()> fresh)
      : name(std::move(engine_name)), fresh_url(std::move(fresh)) {}

  std::string name;  // "sqlite", "postgres": used in test names
  // Returns the URL of a fresh database without a schema, distinct on every call, that
  // lives until the end of the test program.
  std::function<std::string()> fresh_url;
  // Faults the server tests inject, written by the engine's fixture. Empty for an engine whose
  // faults those tests still write themselves (sqlite, postgres: moving them here is left to
  // do).
  // Holds a lock under which every enqueue into the database at `url` waits, until the
  // returned object is destroyed.
  std::function<std::shared_ptr<void>(const std::string& url)> lock_jobs;
  // Makes the jobs of the database at `url` unreadable (its server still answers).
  std::function<void(const std::string& url)> break_jobs;
  // Kills the database server (every connection drops, transactions in flight are lost) and
  // starts it again; returns when it accepts connections.
  std::function<void()> restart_server;
  // What the restart is, for fault records: "mariadbd killed with SIGKILL, restarted".
  std::string restart_detail;
  // Times (run_at, leases) come from the database server's clock, not the worker's.
  bool server_clock = false;
};

// Every engine of the build, in the order of READPAST_ENGINES. PostgreSQL starts (once per
// test program) a real server in a temporary directory; see postgres_server.hpp.
std::vector<EngineUnderTest> engines_under_test();

// The names, for INSTANTIATE_TEST_SUITE_P.
std::vector<std::string> engine_names();
const EngineUnderTest& engine_named(const std::string& name);

}  // namespace readpast::test
