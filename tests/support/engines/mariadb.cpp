// The MariaDB engine under test: a fresh database of one real server per test program,
// started in a temporary directory (support/engines/mariadb_server.hpp).
#include <memory>
#include <string>

#include "support/engines.hpp"
#include "support/engines/mariadb_server.hpp"

namespace readpast::test {
namespace {

// LOCK TABLES ... WRITE on a root session kept open: every other session's statement on the
// jobs waits until it is closed.
std::shared_ptr<void> hold_mariadb_write_lock(const std::string& url) {
  auto session = std::make_shared<MariadbServer::Session>(MariadbServer::shared(),
                                                          MariadbServer::database_of(url));
  session->execute("LOCK TABLES readpast_jobs WRITE");
  return session;
}

// The finished job's row, or the resolver's lock row ('dependencies' in readpast_locks), locked
// as a round locks them, in a transaction the session's end rolls back.
std::shared_ptr<void> hold_mariadb_for_resolver(const std::string& url,
                                                EngineUnderTest::ResolverHold what,
                                                std::int64_t job) {
  auto session = std::make_shared<MariadbServer::Session>(MariadbServer::shared(),
                                                          MariadbServer::database_of(url));
  session->execute("START TRANSACTION");
  session->execute(what == EngineUnderTest::ResolverHold::kFinishedJobRow
                       ? "SELECT id FROM readpast_jobs WHERE id = " + std::to_string(job) +
                             " FOR UPDATE"
                       : "SELECT name FROM readpast_locks WHERE name = 'dependencies' FOR UPDATE");
  return session;
}

// The table renamed: the server answers and the version table reads, but no jobs.
void make_mariadb_jobs_unreadable(const std::string& url) {
  MariadbServer::shared().execute("RENAME TABLE readpast_jobs TO readpast_jobs_gone",
                                  MariadbServer::database_of(url));
}

}  // namespace

EngineUnderTest mariadb_under_test() {
  EngineUnderTest engine;
  engine.name = "mariadb";
  engine.fresh_url = [] { return MariadbServer::shared().fresh_database_url(); };
  engine.concurrent_writers = true;
  engine.server_clock = true;
  engine.crash_and_restart = [] {
    MariadbServer::shared().restart_immediate();
    return std::string("mariadbd killed with SIGKILL, restarted");
  };
  engine.hold_write_lock = hold_mariadb_write_lock;
  engine.hold_for_resolver = hold_mariadb_for_resolver;
  engine.make_jobs_unreadable = make_mariadb_jobs_unreadable;
  engine.server_port = [] { return MariadbServer::shared().port(); };
  engine.fast_network_failure = "connect_timeout=2&reply_timeout=2s";
  return engine;
}

}  // namespace readpast::test
