// engines/postgres/pg_pool.hpp — the connections a Queue's threads share.
//
// Each operation borrows one connection for its duration (a statement or a short
// transaction) and gives it back, so a worker with many threads needs only as many
// connections as run statements at the same moment: at most max_connections, created on
// demand and kept while idle.
//
// Outages: when the server goes away (restart, fail-over, network), the pool notices
// when an operation loses its connection or a new connection fails (an idle connection
// that the server closed is just replaced). It logs that once, then reconnects on demand
// with exponential backoff
// (50 ms doubling to 2 s): while a reconnect attempt is not due, acquire() fails at once
// with kUnavailable and the last reason, without touching the network, so a worker's retry
// loop cannot hammer a server that is starting up. The first successful connection logs
// the recovery, once.
//
// Thread-safety: every method may be called from any thread. Members are either constant
// after construction or guarded by mu_.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engines/postgres/pg_connection.hpp"
#include "readpast/options.hpp"

namespace readpast::detail::pg {

class ConnectionPool;

// A connection on loan; goes back to the pool (or is closed, if broken) on destruction.
class PooledConnection {
 public:
  PooledConnection(ConnectionPool& pool, std::unique_ptr<Connection> connection,
                   std::uint64_t epoch)
      : pool_(&pool), connection_(std::move(connection)), epoch_(epoch) {}
  PooledConnection(PooledConnection&& other) noexcept = default;
  PooledConnection& operator=(PooledConnection&&) = delete;
  ~PooledConnection();

  Connection& operator*() const noexcept { return *connection_; }
  Connection* operator->() const noexcept { return connection_.get(); }

 private:
  ConnectionPool* pool_;
  std::unique_ptr<Connection> connection_;  // null once moved from
  std::uint64_t epoch_;
};

class ConnectionPool {
 public:
  ConnectionPool(ConnectionConfig config, Logger logger, std::size_t max_connections);
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // An idle connection, or a new one. Waits (up to 30 s) while all max_connections are on
  // loan. kUnavailable when the server cannot be reached.
  Result<PooledConnection> acquire();

  // Opens the first connection and keeps it idle. Unlike acquire(), a failure here is
  // only returned (the caller reports it), not logged as an outage.
  Status connect_first();

  const ConnectionConfig& config() const noexcept { return config_; }

 private:
  friend class PooledConnection;
  using Clock = std::chrono::steady_clock;

  void give_back(std::unique_ptr<Connection> connection, std::uint64_t epoch);
  // REQUIRES: mu_ held. Starts an outage (logging it) unless one is already under way.
  void begin_outage(const std::string& reason, bool lost);
  void log(LogLevel level, const std::string& line) const;

  // Constant after construction.
  const ConnectionConfig config_;
  const Logger logger_;
  const std::size_t max_connections_;

  std::mutex mu_;
  std::condition_variable released_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  std::size_t open_ = 0;                           // guarded by mu_: idle + on loan
  // Outage state, guarded by mu_. epoch_ counts outages; a connection remembers the epoch
  // it was made in, so that the many connections one restart breaks report it only once.
  std::uint64_t epoch_ = 0;
  bool in_outage_ = false;
  bool connecting_ = false;  // one reconnect attempt at a time during an outage
  Clock::time_point outage_since_{};
  Clock::time_point next_attempt_{};
  Clock::duration backoff_{};
  std::string last_error_;
};

}  // namespace readpast::detail::pg
