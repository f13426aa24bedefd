// core/lease_tokens.hpp — lease tokens, made in one place for every engine: 128 bits from the
// operating system's strong random source (random_bytes.hpp), written as LeaseToken holds
// them, 32 lower-case hex digits. The PostgreSQL engine sends a lease's tokens as a parameter
// (fill_random, 16 bytes each); SQLite's lease is one UPDATE of however many rows it picks, so
// its connections register readpast_lease_token(), which draws from a LeaseTokenSource.
//
// Thread-safety: write_token_hex is pure; a LeaseTokenSource belongs to one thread at a time.
#pragma once

#include <array>
#include <cstddef>
#include <span>

namespace readpast::detail {

inline constexpr std::size_t kLeaseTokenBytes = 16;
inline constexpr std::size_t kLeaseTokenHexDigits = 2 * kLeaseTokenBytes;

// The 32 lower-case hex digits of a token's 16 bytes.
void write_token_hex(std::span<const char, kLeaseTokenBytes> bytes,
                     std::span<char, kLeaseTokenHexDigits> out);

// Tokens drawn from a buffer of random bytes that is refilled (one getrandom call) every
// 64 tokens, instead of one system call per token.
class LeaseTokenSource {
 public:
  void next_hex(std::span<char, kLeaseTokenHexDigits> out);

 private:
  std::array<char, 64 * kLeaseTokenBytes> random_{};
  std::size_t used_ = random_.size();  // bytes of random_ already handed out
};

}  // namespace readpast::detail
