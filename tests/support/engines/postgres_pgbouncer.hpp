// A real PgBouncer (Debian's, /usr/sbin/pgbouncer or $READPAST_PGBOUNCER) in transaction
// pooling mode in front of the shared test PostgreSQL server (postgres_server.hpp), on a free
// port of 127.0.0.1: every database of that server is reachable through it as the same user.
//
// - PgBouncer refuses to run as root: run as root, it runs as the `postgres` system user.
// - It is a child of the test program, killed with it (PR_SET_PDEATHSIG) if the program dies,
//   and stopped by its pid (SIGTERM, then SIGKILL) when the object is destroyed.
//
// Thread-safety: url() may be called from any thread.
#pragma once

#include <sys/types.h>

#include <string>

#include "support/temp_dir.hpp"

namespace readpast::test {

class PgBouncer {
 public:
  // Starts it and waits until it accepts connections; throws std::runtime_error (with its
  // log) when it cannot.
  // server_pool_size: server connections per database and user (default_pool_size);
  // max_clients: client connections it accepts (max_client_conn).
  explicit PgBouncer(int postgres_port, int server_pool_size = 40, int max_clients = 2000);
  ~PgBouncer();
  PgBouncer(const PgBouncer&) = delete;
  PgBouncer& operator=(const PgBouncer&) = delete;

  // One in front of PostgresServer::shared(), started on first use.
  static PgBouncer& shared();

  int port() const noexcept { return port_; }
  // `url` (a URL of the PostgreSQL server) with the host and port of the pooler instead.
  std::string through(const std::string& url) const;

 private:
  std::string log_tail() const;

  TempDir dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace readpast::test
