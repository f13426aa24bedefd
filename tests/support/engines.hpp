// The engines the shared suites (conformance, multi-process, worker, server, chaos) run
// against: every engine of the build (READPAST_ENGINES). Each engine has a fixture,
// support/engines/<name>.cpp defining `EngineUnderTest <name>_under_test()`, and
// tests/CMakeLists.txt generates engines_under_test() from the list.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace readpast::test {

// What the shared suites need of an engine, beyond its URL. Each engine's fixture fills it in;
// a shared test never names an engine.
struct EngineUnderTest {
  std::string name;  // "sqlite", "postgres", "pgbouncer": used in test names
  // The registered engine its URLs open (src/engines/engine_registry.hpp): the name, but for
  // a variant of another engine ("pgbouncer" runs on "postgres").
  std::string engine;
  const std::string& engine_name() const { return engine.empty() ? name : engine; }
  // Returns the URL of a fresh database without a schema, distinct on every call, that
  // lives until the end of the test program.
  std::function<std::string()> fresh_url;
  // The same, but with readpast's schema already in it. Empty: the engine has no such
  // databases ready. Suites take it through fresh_url_to_init().
  std::function<std::string()> fresh_url_with_schema;
  // A fresh database for a suite that makes the schema in every database first (the
  // conformance suite's init_schema, the command line suite's `readpast init`): with the
  // schema already there where the engine has such databases, which that step then finds.
  std::string fresh_url_to_init() const {
    return fresh_url_with_schema ? fresh_url_with_schema() : fresh_url();
  }
  // Writers do not serialise on one lock (a database server): the multi-process suites
  // run more processes and jobs.
  bool concurrent_writers = false;
  // Times come from the database server's clock, so a worker whose clock jumps moves no
  // run_at and no lease. (SQLite has no server: each process reads its own host clock.)
  bool server_clock = false;
  // Engines with a server: kills it without a clean shutdown (every connection drops, the
  // transactions in flight are lost), starts it again and returns how, for the fault
  // history. Empty for an embedded engine: there is no server to crash.
  std::function<std::string()> crash_and_restart;
  // Takes the write lock of the database at `url` (with its schema) and holds it until the
  // returned object is destroyed, so that every enqueue waits.
  std::function<std::shared_ptr<void>(const std::string& url)> hold_write_lock;
  // Takes, in another session of the database at `url` (with its schema), what a round of
  // dependency resolution needs, and holds it until the returned object is destroyed: the
  // row of the finished job `job`, or the resolver's lock. An engine whose rounds skip what
  // others hold (SKIP LOCKED) then tells nothing in them; SQLite's waits for the write lock.
  enum class ResolverHold { kFinishedJobRow, kResolverLock };
  std::function<std::shared_ptr<void>(const std::string& url, ResolverHold what, std::int64_t job)>
      hold_for_resolver;
  // Leaves the database at `url` answering, with its schema version readable, but its jobs
  // unreadable.
  std::function<void(const std::string& url)> make_jobs_unreadable;
  // Engines with a server reached over TCP: the port its fresh URLs name (the network tests
  // put a proxy in its place). Empty for an embedded engine.
  std::function<int()> server_port;
  // URL parameters (a&b, no leading ?) with which a connection whose network goes silent
  // fails within about 2 s, and a new one within 2 s: the network tests' settings.
  std::string fast_network_failure;
  // The same engine reached another way, run by the shared suites as engines of their own
  // (PostgreSQL through PgBouncer in transaction mode: "pgbouncer"). The generated
  // engines_under_test() lists them after their engine. Only the conformance, multi-process
  // and engine-specific CTest entries name them (tests/<name>/CMakeLists.txt).
  std::vector<EngineUnderTest> variants;
};

// Every engine of the build, in the order of READPAST_ENGINES. An engine with a server
// starts a real one (once per test program) in a temporary directory; see
// engines/postgres_server.hpp.
std::vector<EngineUnderTest> engines_under_test();

// The names, for INSTANTIATE_TEST_SUITE_P.
std::vector<std::string> engine_names();
const EngineUnderTest& engine_named(const std::string& name);

}  // namespace readpast::test
