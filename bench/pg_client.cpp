#include "pg_client.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "common.hpp"

namespace readpast::bench {
namespace {

void put32(std::string& out, std::uint32_t v) {
  v = htonl(v);
  out.append(reinterpret_cast<const char*>(&v), 4);
}
void put16(std::string& out, std::uint16_t v) {
  v = htons(v);
  out.append(reinterpret_cast<const char*>(&v), 2);
}
void put64(std::string& out, std::uint64_t v) {
  put32(out, static_cast<std::uint32_t>(v >> 32));
  put32(out, static_cast<std::uint32_t>(v & 0xffffffffu));
}

std::string array_header(std::size_t count, std::uint32_t element_oid) {
  std::string out;
  put32(out, 1);  // dimensions
  put32(out, 0);  // no NULLs
  put32(out, element_oid);
  put32(out, static_cast<std::uint32_t>(count));
  put32(out, 1);  // lower bound
  return out;
}

constexpr std::uint32_t kInt8Oid = 20;
constexpr std::uint32_t kByteaOid = 17;

}  // namespace

PgParams& PgParams::int4(std::int32_t v) {
  std::string out;
  put32(out, static_cast<std::uint32_t>(v));
  values_.push_back(std::move(out));
  return *this;
}

PgParams& PgParams::int8(std::int64_t v) {
  std::string out;
  put64(out, static_cast<std::uint64_t>(v));
  values_.push_back(std::move(out));
  return *this;
}

PgParams& PgParams::bytes(std::string_view v) {
  values_.emplace_back(v);
  return *this;
}

PgParams& PgParams::int8_array(std::span<const std::int64_t> values) {
  std::string out = array_header(values.size(), kInt8Oid);
  for (std::int64_t v : values) {
    put32(out, 8);
    put64(out, static_cast<std::uint64_t>(v));
  }
  values_.push_back(std::move(out));
  return *this;
}

PgParams& PgParams::bytea_array(std::span<const std::string> values) {
  std::string out = array_header(values.size(), kByteaOid);
  for (const auto& v : values) {
    put32(out, static_cast<std::uint32_t>(v.size()));
    out += v;
  }
  values_.push_back(std::move(out));
  return *this;
}

const char* const* PgParams::values() const {
  pointers_.clear();
  for (const auto& v : values_) pointers_.push_back(v.data());
  return pointers_.data();
}

const int* PgParams::lengths() const {
  lengths_.clear();
  for (const auto& v : values_) lengths_.push_back(static_cast<int>(v.size()));
  return lengths_.data();
}

const int* PgParams::formats() const {
  formats_.assign(values_.size(), 1);
  return formats_.data();
}

PgConn::PgConn(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
  if (!conn_ || PQstatus(conn_.get()) != CONNECTION_OK) {
    fail("cannot connect to PostgreSQL: " +
         std::string(conn_ ? PQerrorMessage(conn_.get()) : "out of memory"));
  }
  PQsetNoticeProcessor(
      conn_.get(), [](void*, const char*) {}, nullptr);
}

PgResult PgConn::check(PGresult* raw, const std::string& what) {
  PgResult result(raw);
  const auto status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    fail("PostgreSQL: " + what.substr(0, 200) + ": " + PQerrorMessage(conn_.get()));
  }
  return result;
}

void PgConn::exec(const std::string& sql) {
  // PQexec returns only the last result of several statements; earlier errors abort the
  // rest and are reported by that last result.
  check(PQexec(conn_.get(), sql.c_str()), sql);
}

std::string PgConn::scalar(const std::string& sql) {
  auto result = check(PQexec(conn_.get(), sql.c_str()), sql);
  if (PQntuples(result.get()) < 1 || PQgetisnull(result.get(), 0, 0)) return {};
  return PQgetvalue(result.get(), 0, 0);
}

void PgConn::prepare(const std::string& name, const std::string& sql) {
  check(PQprepare(conn_.get(), name.c_str(), sql.c_str(), 0, nullptr), sql);
}

PgResult PgConn::run(const std::string& name, const PgParams& params) {
  return check(PQexecPrepared(conn_.get(), name.c_str(), params.size(), params.values(),
                              params.lengths(), params.formats(), /*resultFormat=*/1),
               name);
}

std::int64_t PgConn::copy_rows(const std::string& copy_sql, std::string_view queue,
                               std::span<const std::string> payloads) {
  PGconn* c = conn_.get();
  PgResult start(PQexec(c, copy_sql.c_str()));
  if (!start || PQresultStatus(start.get()) != PGRES_COPY_IN) {
    fail("COPY did not start: " + std::string(PQerrorMessage(c)));
  }
  // Binary COPY: signature, flags, extension length; then per row the field count and
  // (length, bytes) per field; then -1.
  std::string out("PGCOPY\n\377\r\n\0", 11);
  put32(out, 0);
  put32(out, 0);
  for (const auto& p : payloads) {
    put16(out, 2);
    put32(out, static_cast<std::uint32_t>(queue.size()));
    out += queue;
    put32(out, static_cast<std::uint32_t>(p.size()));
    out += p;
  }
  put16(out, 0xffff);
  if (PQputCopyData(c, out.data(), static_cast<int>(out.size())) != 1 ||
      PQputCopyEnd(c, nullptr) != 1) {
    fail("COPY failed: " + std::string(PQerrorMessage(c)));
  }
  auto done = check(PQgetResult(c), "COPY");
  while (PgResult more{PQgetResult(c)}) {
  }
  return std::stoll(PQcmdTuples(done.get()));
}

std::int64_t pg_int8(const PGresult* r, int row, int col) {
  std::uint64_t v = 0;
  const char* p = PQgetvalue(r, row, col);
  if (PQgetlength(r, row, col) != 8) return 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return static_cast<std::int64_t>(v);
}

std::string_view pg_bytes(const PGresult* r, int row, int col) {
  return {PQgetvalue(r, row, col), static_cast<std::size_t>(PQgetlength(r, row, col))};
}

}  // namespace readpast::bench
