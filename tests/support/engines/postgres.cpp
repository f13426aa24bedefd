// The PostgreSQL engine under test: a fresh database of one real server per test program,
// started in a temporary directory (support/engines/postgres_server.hpp).
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "postgres/pg_test_util.hpp"
#include "readpast/queue.hpp"
#include "support/engines.hpp"
#include "support/engines/postgres_pgbouncer.hpp"
#include "support/engines/postgres_server.hpp"

namespace readpast::test {
namespace {

// The schema the engine uses when the URL names none.
constexpr const char* kPostgresJobs = "readpast.jobs";

// The test's own libpq connections take a readpast URL without readpast's parameters
// (?pool_mode, ?lease_lanes), which libpq does not know; so the hooks below serve the variants
// unchanged.
std::string libpq_url(const std::string& url) {
  return url.substr(0, url.find('?'));
}

std::shared_ptr<void> hold_postgres_write_lock(const std::string& url) {
  auto connection = std::make_shared<SqlConnection>(libpq_url(url));
  connection->exec("BEGIN");
  connection->exec(std::string("LOCK TABLE ") + kPostgresJobs + " IN EXCLUSIVE MODE");
  return std::shared_ptr<void>(connection.get(), [connection](void*) mutable {
    connection->exec("ROLLBACK");
    connection.reset();
  });
}

// The finished job's row in `done`, locked as a round locks it; or the resolver's advisory
// lock (statements.sql, resolve_lock; the key of the default schema's channel).
std::shared_ptr<void> hold_postgres_for_resolver(const std::string& url,
                                                 EngineUnderTest::ResolverHold what,
                                                 std::int64_t job) {
  auto connection = std::make_shared<SqlConnection>(libpq_url(url));
  connection->exec("BEGIN");
  if (what == EngineUnderTest::ResolverHold::kFinishedJobRow) {
    connection->query("SELECT id FROM readpast.done WHERE id = $1::bigint FOR UPDATE",
                      {std::to_string(job)});
  } else {
    connection->exec("SELECT pg_advisory_xact_lock(hashtext('readpast.jobs.dependencies'))");
  }
  return std::shared_ptr<void>(connection.get(), [connection](void*) mutable {
    connection->exec("COMMIT");
    connection.reset();
  });
}

// The table renamed: the server answers and the version table reads, but no jobs.
void make_postgres_jobs_unreadable(const std::string& url) {
  SqlConnection connection(libpq_url(url));
  connection.exec(std::string("ALTER TABLE ") + kPostgresJobs + " RENAME TO jobs_gone");
}

// A copy of a database migrated once: migrating each test's database was about 0.3 s of
// every PostgreSQL test of the conformance suite.
std::string fresh_database_url_with_schema() {
  return PostgresServer::shared().fresh_database_url_from(
      "readpast_migrated", [](const std::string& url) {
        QueueOptions options;
        options.init_schema = true;
        if (auto queue = Queue::open(url, options); !queue) {
          throw std::runtime_error("cannot make the schema of the template database: " +
                                   queue.error().message);
        }
      });
}

}  // namespace

EngineUnderTest postgres_under_test() {
  EngineUnderTest engine;
  engine.name = "postgres";
  engine.fresh_url = [] { return PostgresServer::shared().fresh_database_url(); };
  engine.fresh_url_with_schema = fresh_database_url_with_schema;
  engine.concurrent_writers = true;
  engine.server_clock = true;
  engine.crash_and_restart = [] {
    PostgresServer::shared().restart_immediate();
    return std::string("pg_ctl restart -m immediate");
  };
  engine.hold_write_lock = hold_postgres_write_lock;
  engine.hold_for_resolver = hold_postgres_for_resolver;
  engine.make_jobs_unreadable = make_postgres_jobs_unreadable;

  // Every connection through PgBouncer in transaction mode, wake-ups by polling (no
  // listen_url): the hardest way to reach the server.
  EngineUnderTest pooled = engine;
  pooled.name = "pgbouncer";
  pooled.engine = "postgres";
  pooled.fresh_url = [] {
    return PgBouncer::shared().through(PostgresServer::shared().fresh_database_url()) +
           "?pool_mode=transaction";
  };
  pooled.fresh_url_with_schema = [] {
    return PgBouncer::shared().through(fresh_database_url_with_schema()) + "?pool_mode=transaction";
  };
  engine.variants.push_back(std::move(pooled));

  // Every lease lane by lane from the process' frontiers, rescue and the due probe from them
  // too: what the engine does while another session holds an old snapshot (lease_lanes=auto
  // turns it on then; src/engines/postgres/lease_mode.hpp).
  EngineUnderTest lanes = engine;
  lanes.name = "postgres_lanes";
  lanes.engine = "postgres";
  lanes.fresh_url = [] {
    return PostgresServer::shared().fresh_database_url() + "?lease_lanes=always";
  };
  lanes.fresh_url_with_schema = [] {
    return fresh_database_url_with_schema() + "?lease_lanes=always";
  };
  engine.variants.push_back(std::move(lanes));
  // Set after the variant's copy: its URLs name PgBouncer's port, not the server's.
  engine.server_port = [] { return PostgresServer::shared().port(); };
  engine.fast_network_failure =
      "keepalives_idle=1&keepalives_interval=1&keepalives_count=2&tcp_user_timeout=2000&"
      "connect_timeout=2";
  return engine;
}

}  // namespace readpast::test
