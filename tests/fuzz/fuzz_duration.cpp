// Durations from the command line (--delay, --lease, --timeout, --grace, --backoff-*):
// parse_duration never throws or crashes; what it accepts lies in [0, 100 years] and
// survives format_duration → parse_duration unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "readpast/time.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = readpast::parse_duration(text);
  if (!parsed) {
    if (parsed.error().code != readpast::ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  if (*parsed < readpast::Duration::zero() || *parsed > readpast::kMaxDuration) std::abort();
  auto again = readpast::parse_duration(readpast::format_duration(*parsed));
  if (!again || *again != *parsed) std::abort();
  return 0;
}
