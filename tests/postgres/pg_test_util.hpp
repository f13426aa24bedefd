// Helpers of the PostgreSQL-specific tests: a raw libpq connection that speaks SQL with
// text parameters (as psql or any other language would), and a fixture with a fresh
// database of the shared test server.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "readpast/readpast.hpp"
#include "support/engines/postgres_pgbouncer.hpp"
#include "support/engines/postgres_server.hpp"

namespace readpast::test {

using namespace std::chrono_literals;

using Value = std::optional<std::string>;
using Row = std::vector<Value>;

// A libpq connection the test owns: text parameters, text results. Throws on errors, with
// the server's message, so a test fails where the SQL did.
class SqlConnection {
 public:
  explicit SqlConnection(const std::string& url) : conn_(PQconnectdb(url.c_str()), &PQfinish) {
    if (PQstatus(conn_.get()) != CONNECTION_OK) {
      throw std::runtime_error("connect: " + std::string(PQerrorMessage(conn_.get())));
    }
  }
  PGconn* get() const noexcept { return conn_.get(); }

  std::vector<Row> query(const std::string& sql, const std::vector<Value>& params = {}) {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
    std::unique_ptr<PGresult, decltype(&PQclear)> result(
        PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(values.size()), nullptr,
                     values.data(), nullptr, nullptr, 0),
        &PQclear);
    const auto status = PQresultStatus(result.get());
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
      throw std::runtime_error(sql + ": " + PQresultErrorMessage(result.get()));
    }
    std::vector<Row> rows;
    for (int r = 0; r < PQntuples(result.get()); ++r) {
      Row row;
      for (int c = 0; c < PQnfields(result.get()); ++c) {
        row.push_back(PQgetisnull(result.get(), r, c)
                          ? Value{}
                          : Value{std::string(PQgetvalue(result.get(), r, c))});
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  // The single value of a one-row, one-column query ("" for NULL).
  std::string scalar(const std::string& sql, const std::vector<Value>& params = {}) {
    auto rows = query(sql, params);
    if (rows.size() != 1 || rows[0].size() != 1) {
      throw std::runtime_error(sql + ": expected one value, got " + std::to_string(rows.size()) +
                               " rows");
    }
    return rows[0][0].value_or("");
  }

  void exec(const std::string& sql) { query(sql); }

  // Runs a script of several statements (no parameters), as one implicit transaction.
  void script(const std::string& sql) {
    std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn_.get(), sql.c_str()),
                                                         &PQclear);
    if (PQresultStatus(result.get()) != PGRES_COMMAND_OK &&
        PQresultStatus(result.get()) != PGRES_TUPLES_OK) {
      throw std::runtime_error("script: " + std::string(PQresultErrorMessage(result.get())));
    }
  }

 private:
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn_;
};

// The value of a result that must succeed; fails the test with the error otherwise.
template <class T>
T must(Result<T> result) {
  if (!result) throw std::runtime_error("unexpected error: " + result.error().message);
  return std::move(*result);
}
inline void must(Status status) {
  if (!status) throw std::runtime_error("unexpected error: " + status.error().message);
}

// A job's lease token as SQL writes a uuid, turned into the API's 32 hex digits.
inline LeaseToken token_from_uuid_text(std::string text) {
  std::erase(text, '-');
  return must(LeaseToken::from_hex(text));
}

// Collects a Queue's log lines (thread-safe).
struct LogCapture {
  std::mutex mu;
  std::vector<std::string> lines;
  Logger logger() {
    return [this](const LogRecord& record) {
      std::lock_guard lock(mu);
      lines.push_back(record.message);
    };
  }
  int count(const std::string& needle) {
    std::lock_guard lock(mu);
    int n = 0;
    for (const auto& line : lines) n += line.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }
  std::string all() {
    std::lock_guard lock(mu);
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    return text;
  }
};

// Polls `condition` every 10 ms until it holds or `patience` passes.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::steady_clock::duration patience = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

// A fresh database per test, with the readpast schema created.
// A fresh database with readpast's schema. With READPAST_PG_THROUGH=pgbouncer every
// connection, the test's own SQL included, goes through PgBouncer in transaction mode
// (tests/postgres/CMakeLists.txt runs the SQL functions' tests so).
class PostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = sql_url_ = PostgresServer::shared().fresh_database_url();
    if (const char* through = std::getenv("READPAST_PG_THROUGH");
        through != nullptr && std::string(through) == "pgbouncer") {
      sql_url_ = PgBouncer::shared().through(sql_url_);
      url_ = sql_url_ + "?pool_mode=transaction";
    }
    QueueOptions options;
    options.init_schema = true;
    must(Queue::open(url_, options));
  }
  PostgresServer& server() { return PostgresServer::shared(); }
  const std::string& url() const { return url_; }
  Queue open(QueueOptions options = {}) { return must(Queue::open(url_, std::move(options))); }
  // The same, with more of readpast's URL parameters ("a=1&b=2").
  Queue open_with(const std::string& params, QueueOptions options = {}) {
    const char* join = url_.find('?') == std::string::npos ? "?" : "&";
    return must(Queue::open(url_ + join + params, std::move(options)));
  }
  SqlConnection sql() { return SqlConnection(sql_url_); }

 private:
  std::string url_;      // readpast's
  std::string sql_url_;  // libpq's: the same database, without readpast's own parameters
};

inline NewJob job(std::string queue, std::string payload = "payload") {
  NewJob j;
  j.queue = std::move(queue);
  j.payload = std::move(payload);
  return j;
}

// Leases up to `count` jobs of the queue, 1,000 a lease, and completes each: the head of
// dead entries in jobs_lease_idx that the tests of long heads need, kept there by a held
// snapshot or by autovacuum turned off.
inline void complete_in_leases_of_1000(Queue& queue, const std::string& queue_name, int count) {
  for (int taken = 0; taken < count;) {
    auto leased = must(queue.lease(
        {.queue = queue_name, .worker_id = "w", .max_jobs = std::min(1000, count - taken)}));
    if (leased.empty()) return;
    for (const auto& j : leased) must(queue.complete(j.id, *j.lease_token));
    taken += static_cast<int>(leased.size());
  }
}

// Every job of a queue, in id order.
inline ListRequest in_queue(std::string queue, int limit = 100) {
  ListRequest request;
  request.queue = std::move(queue);
  request.limit = limit;
  return request;
}

}  // namespace readpast::test
