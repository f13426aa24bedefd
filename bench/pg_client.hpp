// bench/pg_client.hpp — a minimal libpq client for what the benchmark does outside readpast:
// administration (reset, prefill, VACUUM, CHECKPOINT) and the raw-SQL ceiling. Written
// against libpq directly, not readpast's engine, so that the ceiling owes nothing to the
// code it is a ceiling for.
//
// Thread-safety: a PgConn is used by one thread at a time.
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace readpast::bench {

struct PgResultDeleter {
  void operator()(PGresult* r) const noexcept { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, PgResultDeleter>;

// Parameters in binary format, built in order ($1, $2, ...).
class PgParams {
 public:
  PgParams& int4(std::int32_t v);
  PgParams& int8(std::int64_t v);
  PgParams& bytes(std::string_view v);  // text or bytea
  PgParams& int8_array(std::span<const std::int64_t> values);
  PgParams& bytea_array(std::span<const std::string> values);

  int size() const { return static_cast<int>(values_.size()); }
  const char* const* values() const;
  const int* lengths() const;
  const int* formats() const;

 private:
  std::vector<std::string> values_;
  mutable std::vector<const char*> pointers_;
  mutable std::vector<int> lengths_;
  mutable std::vector<int> formats_;
};

class PgConn {
 public:
  // Throws BenchError when it cannot connect.
  explicit PgConn(const std::string& conninfo);
  PgConn(const PgConn&) = delete;
  PgConn& operator=(const PgConn&) = delete;

  // Simple-protocol statements (one or several); throws on error.
  void exec(const std::string& sql);
  // One value of the first row of a simple query, as text.
  std::string scalar(const std::string& sql);
  std::int64_t scalar_int(const std::string& sql) { return std::stoll(scalar(sql)); }

  void prepare(const std::string& name, const std::string& sql);
  // Runs a prepared statement with binary parameters and binary results; throws on error.
  PgResult run(const std::string& name, const PgParams& params);

  // COPY table (columns) FROM STDIN (FORMAT binary) with one bytea-or-text column per row
  // value given; returns rows copied.
  std::int64_t copy_rows(const std::string& copy_sql, std::string_view queue,
                         std::span<const std::string> payloads);

  PGconn* raw() const { return conn_.get(); }

 private:
  struct Closer {
    void operator()(PGconn* c) const noexcept { PQfinish(c); }
  };
  PgResult check(PGresult* result, const std::string& what);
  std::unique_ptr<PGconn, Closer> conn_;
};

// Binary result readers.
std::int64_t pg_int8(const PGresult* r, int row, int col);
std::string_view pg_bytes(const PGresult* r, int row, int col);

}  // namespace readpast::bench
