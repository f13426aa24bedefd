// The MariaDB engine under test: a fresh database of one real server per test program,
// started in a temporary directory (support/mariadb_server.hpp).
#include "support/engines.hpp"
#include "support/mariadb_server.hpp"

namespace readpast::test {

EngineUnderTest mariadb_under_test() {
  return {"mariadb", [] { return MariadbServer::shared().fresh_database_url(); }};
}

}  // namespace readpast::test
