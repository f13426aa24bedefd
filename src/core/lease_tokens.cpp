#include "core/lease_tokens.hpp"

#include <algorithm>

#include "core/random_bytes.hpp"

namespace readpast::detail {

void write_token_hex(std::span<const char, kLeaseTokenBytes> bytes,
                     std::span<char, kLeaseTokenHexDigits> out) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto b = static_cast<unsigned char>(bytes[i]);
    out[2 * i] = kHex[b >> 4];
    out[2 * i + 1] = kHex[b & 0xf];
  }
}

void LeaseTokenSource::next_hex(std::span<char, kLeaseTokenHexDigits> out) {
  if (used_ == random_.size()) {
    fill_random(random_);
    used_ = 0;
  }
  const std::span<char, kLeaseTokenBytes> bytes(random_.data() + used_, kLeaseTokenBytes);
  write_token_hex(bytes, out);
  // Bytes handed out are not kept where a later token could reuse them.
  std::fill(bytes.begin(), bytes.end(), '\0');
  used_ += kLeaseTokenBytes;
}

}  // namespace readpast::detail
