// The MariaDB engine under test: a fresh database of one real server per test program,
// started in a temporary directory (support/mariadb_server.hpp).
#include <memory>

#include "support/engines.hpp"
#include "support/mariadb_server.hpp"

namespace readpast::test {
namespace {

// The database a fresh URL names: mariadb://USER@HOST:PORT/DATABASE.
std::string database_of(const std::string& url) {
  return url.substr(url.rfind('/') + 1);
}

}  // namespace

EngineUnderTest mariadb_under_test() {
  EngineUnderTest engine{"mariadb", [] { return MariadbServer::shared().fresh_database_url(); }};
  // LOCK TABLES ... WRITE: every other session's statement on the jobs waits for UNLOCK.
  engine.lock_jobs = [](const std::string& url) -> std::shared_ptr<void> {
    auto session =
        std::make_shared<MariadbServer::Session>(MariadbServer::shared(), database_of(url));
    session->execute("LOCK TABLES readpast_jobs WRITE");
    return session;
  };
  engine.break_jobs = [](const std::string& url) {
    MariadbServer::shared().execute("DROP TABLE readpast_jobs", database_of(url));
  };
  engine.restart_server = [] { MariadbServer::shared().restart_immediate(); };
  engine.restart_detail = "mariadbd killed with SIGKILL, restarted";
  engine.server_clock = true;
  return engine;
}

}  // namespace readpast::test
