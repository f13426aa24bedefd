#include "engines/postgres/pg_values.hpp"

#include <bit>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include "core/lease_tokens.hpp"

namespace readpast::detail::pg {
namespace {

// PostgreSQL's binary timestamps count microseconds from 2000-01-01 00:00:00 UTC.
constexpr std::int64_t kPostgresEpochOffsetMicros = 946'684'800'000'000;

void append_be(std::string& out, std::uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

std::uint64_t read_be(std::string_view bytes) {
  std::uint64_t v = 0;
  for (char c : bytes) v = (v << 8) | static_cast<unsigned char>(c);
  return v;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return 0;
}

}  // namespace

std::string encode_int8(std::int64_t v) {
  std::string out;
  append_be(out, static_cast<std::uint64_t>(v), 8);
  return out;
}

std::string encode_int4(std::int32_t v) {
  std::string out;
  append_be(out, static_cast<std::uint32_t>(v), 4);
  return out;
}

std::string encode_float8(double v) {
  std::string out;
  append_be(out, std::bit_cast<std::uint64_t>(v), 8);
  return out;
}

std::string encode_timestamptz(TimePoint t) {
  return encode_int8(t.time_since_epoch().count() - kPostgresEpochOffsetMicros);
}

UuidBytes uuid_bytes(const LeaseToken& token) {
  const std::string& hex = token.hex();
  UuidBytes out{};
  for (std::size_t i = 0; i < out.size() && 2 * i + 1 < hex.size(); ++i) {
    out[i] = static_cast<char>(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
  }
  return out;
}

std::string encode_uuid(const LeaseToken& token) {
  return std::string(view(uuid_bytes(token)));
}

ArrayParam& ArrayParam::add(std::string_view encoded) {
  append_be(elements_, static_cast<std::uint32_t>(encoded.size()), 4);
  elements_.append(encoded);
  ++count_;
  return *this;
}

ArrayParam& ArrayParam::add_null() {
  append_be(elements_, 0xffffffffu, 4);  // length -1
  has_null_ = true;
  ++count_;
  return *this;
}

std::string ArrayParam::encode() const {
  // array_recv's format: ndim, has-null flag, element type, then per dimension its
  // length and lower bound, then the elements. An empty array has no dimensions.
  std::string out;
  append_be(out, count_ == 0 ? 0 : 1, 4);
  append_be(out, has_null_ ? 1 : 0, 4);
  append_be(out, static_cast<std::uint32_t>(element_), 4);
  if (count_ > 0) {
    append_be(out, static_cast<std::uint32_t>(count_), 4);
    append_be(out, 1, 4);
  }
  out += elements_;
  return out;
}

Params::Value& Params::slot(int number) {
  if (number < 1 || number > size() || values_[static_cast<std::size_t>(number - 1)].bound) {
    throw std::logic_error("statement parameter $" + std::to_string(number) +
                           " is out of range or bound twice");
  }
  return values_[static_cast<std::size_t>(number - 1)];
}

Params& Params::set(int number, std::string encoded) {
  Value& v = slot(number);
  v.bound = true;
  v.bytes = std::move(encoded);
  return *this;
}

Params& Params::set_null(int number) {
  slot(number).bound = true;
  return *this;
}

int Params::first_unbound() const noexcept {
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (!values_[i].bound) return static_cast<int>(i + 1);
  }
  return 0;
}

const char* const* Params::values() const {
  pointers_.clear();
  for (const auto& v : values_) pointers_.push_back(v.bytes ? v.bytes->data() : nullptr);
  return pointers_.data();
}

const int* Params::lengths() const {
  lengths_.clear();
  for (const auto& v : values_) lengths_.push_back(v.bytes ? static_cast<int>(v.bytes->size()) : 0);
  return lengths_.data();
}

const int* Params::formats() const {
  formats_.assign(values_.size(), 1);
  return formats_.data();
}

std::int64_t Rows::affected() const {
  const char* text = PQcmdTuples(result_.get());
  std::int64_t n = 0;
  std::from_chars(text, text + std::strlen(text), n);
  return n;
}

std::string_view Rows::bytes(int row, int col) const {
  return {PQgetvalue(result_.get(), row, col),
          static_cast<std::size_t>(PQgetlength(result_.get(), row, col))};
}

std::int64_t Rows::int8(int row, int col) const {
  auto b = bytes(row, col);
  return b.size() == 8 ? static_cast<std::int64_t>(read_be(b)) : 0;
}

std::int32_t Rows::int4(int row, int col) const {
  auto b = bytes(row, col);
  return b.size() == 4 ? static_cast<std::int32_t>(static_cast<std::uint32_t>(read_be(b))) : 0;
}

bool Rows::boolean(int row, int col) const {
  auto b = bytes(row, col);
  return b.size() == 1 && b[0] != 0;
}

std::string Rows::text(int row, int col) const {
  return std::string(bytes(row, col));
}

TimePoint Rows::timestamptz(int row, int col) const {
  return TimePoint(Duration(int8(row, col) + kPostgresEpochOffsetMicros));
}

UuidBytes Rows::uuid(int row, int col) const {
  const std::string_view raw = bytes(row, col);
  UuidBytes out{};  // as int8() does, what is not a uuid reads as zeros
  if (raw.size() == out.size()) std::memcpy(out.data(), raw.data(), out.size());
  return out;
}

LeaseToken Rows::lease_token(int row, int col) const {
  std::array<char, kLeaseTokenHexDigits> hex{};
  write_token_hex(uuid(row, col), hex);
  // Valid by construction: 32 lower-case hex digits.
  return LeaseToken::from_hex(std::string_view(hex.data(), hex.size())).value();
}

std::optional<std::int64_t> Rows::optional_int8(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  return int8(row, col);
}

std::optional<std::string> Rows::optional_text(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  return text(row, col);
}

std::optional<TimePoint> Rows::optional_timestamptz(int row, int col) const {
  if (is_null(row, col)) return std::nullopt;
  return timestamptz(row, col);
}

}  // namespace readpast::detail::pg
