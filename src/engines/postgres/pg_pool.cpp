#include "engines/postgres/pg_pool.hpp"

#include <algorithm>
#include <cstdio>

#include "core/log.hpp"

namespace readpast::detail::pg {
namespace {

constexpr auto kReconnectFirstBackoff = std::chrono::milliseconds(50);
constexpr auto kReconnectMaxBackoff = std::chrono::seconds(2);
constexpr auto kAcquireTimeout = std::chrono::seconds(30);

std::string seconds_text(std::chrono::steady_clock::duration d) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1fs", std::chrono::duration<double>(d).count());
  return buffer;
}

}  // namespace

PooledConnection::~PooledConnection() {
  if (connection_) pool_->give_back(std::move(connection_), epoch_);
}

ConnectionPool::ConnectionPool(ConnectionConfig config, Logger logger, std::size_t max_connections)
    : config_(std::move(config)),
      logger_(std::move(logger)),
      max_connections_(std::max<std::size_t>(1, max_connections)) {}

void ConnectionPool::log(LogLevel level, const std::string& line) const {
  detail::emit(logger_, level, line);
}

void ConnectionPool::begin_outage(const std::string& reason, bool lost) {
  last_error_ = reason;
  const auto now = Clock::now();
  if (!in_outage_) {
    in_outage_ = true;
    ++epoch_;
    outage_since_ = now;
    backoff_ = kReconnectFirstBackoff;
    // Idle connections date from before the outage: a restart closed them all.
    open_ -= idle_.size();
    idle_.clear();
    released_.notify_all();
    log(LogLevel::kWarn, (lost ? "lost the connection to PostgreSQL (" + reason + ")" : reason) +
                             "; reconnecting with backoff");
    // After a lost connection, the first reconnect is due at once.
    next_attempt_ = lost ? now : now + backoff_;
  } else {
    backoff_ = std::min<Clock::duration>(backoff_ * 2, kReconnectMaxBackoff);
    next_attempt_ = now + backoff_;
  }
}

Result<PooledConnection> ConnectionPool::acquire() {
  std::unique_lock lock(mu_);
  while (true) {
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      const auto epoch = epoch_;
      lock.unlock();
      if (connection->ready_for_reuse())
        return PooledConnection(*this, std::move(connection), epoch);
      // Closed by the server while idle (a restart, or idle_session_timeout). Not an outage
      // yet: the connect below finds out, and logs one if the server is unreachable.
      connection.reset();
      lock.lock();
      --open_;
      continue;
    }
    if (open_ < max_connections_) break;
    if (!released_.wait_for(lock, kAcquireTimeout,
                            [&] { return !idle_.empty() || open_ < max_connections_; })) {
      return fail_with(Error::unavailable("all " + std::to_string(max_connections_) +
                                          " PostgreSQL connections of this process stayed busy "
                                          "for 30s"));
    }
  }
  if (in_outage_ && (connecting_ || Clock::now() < next_attempt_)) {
    return fail_with(Error::unavailable(last_error_));
  }
  ++open_;
  connecting_ = in_outage_;
  lock.unlock();

  auto connection = Connection::open(config_);

  lock.lock();
  connecting_ = false;
  if (!connection) {
    --open_;
    released_.notify_one();
    begin_outage(connection.error().message, /*lost=*/false);
    return fail_with(connection.error());
  }
  if (in_outage_) {
    in_outage_ = false;
    log(LogLevel::kInfo,
        "reconnected to PostgreSQL after " + seconds_text(Clock::now() - outage_since_));
  }
  return PooledConnection(*this, std::move(*connection), epoch_);
}

Status ConnectionPool::connect_first() {
  auto connection = Connection::open(config_);
  if (!connection) return fail_with(connection.error());
  std::lock_guard lock(mu_);
  ++open_;
  idle_.push_back(std::move(*connection));
  return {};
}

void ConnectionPool::give_back(std::unique_ptr<Connection> connection, std::uint64_t epoch) {
  std::lock_guard lock(mu_);
  if (connection->broken() || epoch != epoch_) {
    // A connection lost in this epoch starts an outage; one from an earlier epoch was
    // broken by an outage already reported.
    const bool lost = connection->broken() && epoch == epoch_ && !in_outage_;
    connection.reset();
    --open_;
    if (lost) begin_outage("the connection broke during an operation", /*lost=*/true);
  } else {
    idle_.push_back(std::move(connection));
  }
  released_.notify_one();
}

}  // namespace readpast::detail::pg
