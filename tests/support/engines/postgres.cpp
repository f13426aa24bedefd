// The PostgreSQL engine under test: a fresh database of one real server per test program,
// started in a temporary directory (support/postgres_server.hpp).
#include "support/engines.hpp"
#include "support/postgres_server.hpp"

namespace readpast::test {

EngineUnderTest postgres_under_test() {
  return {"postgres", [] { return PostgresServer::shared().fresh_database_url(); }};
}

}  // namespace readpast::test
