// engines/postgres/pg_values.hpp — statement parameters and result rows in PostgreSQL's
// binary format.
//
// Binary format both ways: payloads travel as raw bytes (no hex doubling, no escaping),
// times as microseconds (no dependence on the session's DateStyle or TimeZone), and arrays
// — how batches reach the server in one statement — need no quoting rules at all.
// Every statement casts its parameters ($1::bigint[]), so the server knows each type and
// the encoder here only has to produce that type's wire form.
//
// Thread-safety: plain values; one object per thread.
#pragma once

#include <libpq-fe.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/job.hpp"
#include "readpast/time.hpp"

namespace readpast::detail::pg {

// Type OIDs of the array elements we send (see pg_type.dat).
enum class Oid : std::uint32_t {
  kBool = 16,
  kBytea = 17,
  kInt8 = 20,
  kInt4 = 23,
  kText = 25,
  kFloat8 = 701,
  kTimestamptz = 1184,
  kUuid = 2950,
};

// Binary encodings of single values.
std::string encode_int8(std::int64_t v);
std::string encode_int4(std::int32_t v);
std::string encode_float8(double v);
std::string encode_timestamptz(TimePoint t);
std::string encode_uuid(const LeaseToken& token);  // 16 bytes; token must not be empty

// A uuid as it travels in binary: 16 bytes. A lease token is one; the settles of a batch
// compare them by these bytes rather than by their 32-digit text, which costs a string for
// every token on every lease and every settle (docs/benchmarks.md, run 55).
using UuidBytes = std::array<char, 16>;
UuidBytes uuid_bytes(const LeaseToken& token);  // token must not be empty
inline std::string_view view(const UuidBytes& bytes) {
  return {bytes.data(), bytes.size()};
}

// A one-dimensional array, built element by element.
class ArrayParam {
 public:
  explicit ArrayParam(Oid element) : element_(element) {}
  ArrayParam& add(std::string_view encoded);
  ArrayParam& add_null();
  template <class T, class Encode>
  ArrayParam& add_optional(const std::optional<T>& value, Encode&& encode) {
    return value ? add(encode(*value)) : add_null();
  }
  std::string encode() const;

 private:
  Oid element_;
  int count_ = 0;
  bool has_null_ = false;
  std::string elements_;  // each: int32 length (-1 for NULL), then the bytes
};

// The parameters of one statement, bound by number ($1 is 1): the constants of the
// generated statement (postgres_statements.hpp), never a number written by hand.
//   Params params(sql::extend::param_count);
//   params.array(sql::extend::ids, ids).int8(sql::extend::lease_us, 30'000'000);
// Connection::exec refuses a statement whose parameters were not all given (a value or NULL).
class Params {
 public:
  explicit Params(int count) : values_(static_cast<std::size_t>(count)) {}

  // REQUIRES: 1 <= number <= count, each number bound once.
  Params& set(int number, std::string encoded);
  Params& set_null(int number);
  Params& int8(int number, std::int64_t v) { return set(number, encode_int8(v)); }
  Params& int4(int number, std::int32_t v) { return set(number, encode_int4(v)); }
  Params& text(int number, std::string_view v) { return set(number, std::string(v)); }
  Params& timestamptz(int number, TimePoint t) { return set(number, encode_timestamptz(t)); }
  Params& array(int number, const ArrayParam& a) { return set(number, a.encode()); }
  template <class T, class Encode>
  Params& optional(int number, const std::optional<T>& value, Encode&& encode) {
    return value ? set(number, encode(*value)) : set_null(number);
  }

  int size() const noexcept { return static_cast<int>(values_.size()); }
  // The first parameter given neither a value nor NULL, or 0 when there is none.
  int first_unbound() const noexcept;
  // Pointer arrays for PQexecPrepared/PQexecParams; valid until the next set().
  const char* const* values() const;
  const int* lengths() const;
  const int* formats() const;

 private:
  struct Value {
    bool bound = false;
    std::optional<std::string> bytes;  // nullopt: NULL
  };
  Value& slot(int number);

  std::vector<Value> values_;
  mutable std::vector<const char*> pointers_;
  mutable std::vector<int> lengths_;
  mutable std::vector<int> formats_;
};

struct ResultDeleter {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

// The rows of a successful statement, read in binary format. Readers check lengths, so a
// column of an unexpected type reads as zero or empty instead of out of bounds.
class Rows {
 public:
  explicit Rows(ResultPtr result) : result_(std::move(result)) {}

  int size() const noexcept { return PQntuples(result_.get()); }
  // Rows changed by an INSERT, UPDATE or DELETE without RETURNING.
  std::int64_t affected() const;

  bool is_null(int row, int col) const { return PQgetisnull(result_.get(), row, col) != 0; }
  std::int64_t int8(int row, int col) const;
  std::int32_t int4(int row, int col) const;
  bool boolean(int row, int col) const;
  std::string text(int row, int col) const;  // text and bytea
  TimePoint timestamptz(int row, int col) const;
  UuidBytes uuid(int row, int col) const;          // a uuid column that is not null
  LeaseToken lease_token(int row, int col) const;  // the same, as the token it holds

  std::optional<std::int64_t> optional_int8(int row, int col) const;
  std::optional<std::string> optional_text(int row, int col) const;
  std::optional<TimePoint> optional_timestamptz(int row, int col) const;

 private:
  std::string_view bytes(int row, int col) const;
  ResultPtr result_;
};

}  // namespace readpast::detail::pg
