// bench/pg_pool.hpp — the connections of a raw-SQL subject on PostgreSQL: opened on demand
// up to a maximum (as many as readpast's pool would use for the same threads), each set up
// once by the subject (its prepared statements), lent to one thread at a time.
//
// Thread-safety: acquire() may be called from many threads at once; a Loan is used by the
// thread that holds it.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pg_client.hpp"

namespace readpast::bench {

class PgPool {
 public:
  PgPool(std::string conninfo, int max_connections, std::function<void(PgConn&)> setup)
      : conninfo_(std::move(conninfo)),
        max_connections_(max_connections),
        setup_(std::move(setup)) {}

  // A connection on loan; given back when destroyed.
  class Loan {
   public:
    Loan(PgPool& owner, std::unique_ptr<PgConn> conn) : owner_(owner), conn_(std::move(conn)) {}
    Loan(const Loan&) = delete;
    Loan& operator=(const Loan&) = delete;
    ~Loan() { owner_.give_back(std::move(conn_)); }
    PgConn* operator->() const { return conn_.get(); }

   private:
    PgPool& owner_;
    std::unique_ptr<PgConn> conn_;
  };

  // Waits while every connection is lent and the maximum is open.
  Loan acquire() {
    std::unique_lock lock(mu_);
    released_.wait(lock, [&] { return !idle_.empty() || open_ < max_connections_; });
    if (!idle_.empty()) {
      auto conn = std::move(idle_.back());
      idle_.pop_back();
      return Loan(*this, std::move(conn));
    }
    ++open_;
    lock.unlock();
    auto conn = std::make_unique<PgConn>(conninfo_);
    setup_(*conn);
    return Loan(*this, std::move(conn));
  }

  int max_connections() const { return max_connections_; }

 private:
  void give_back(std::unique_ptr<PgConn> conn) {
    {
      std::lock_guard lock(mu_);
      idle_.push_back(std::move(conn));
    }
    released_.notify_one();
  }

  const std::string conninfo_;
  const int max_connections_;
  const std::function<void(PgConn&)> setup_;
  std::mutex mu_;
  std::condition_variable released_;
  std::vector<std::unique_ptr<PgConn>> idle_;  // guarded by mu_
  int open_ = 0;                               // guarded by mu_
};

}  // namespace readpast::bench
