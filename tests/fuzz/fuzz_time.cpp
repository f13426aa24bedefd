// Times from the command line (--run-at, RFC 3339): parse_time never throws or crashes, and
// what it accepts survives format_time → parse_time unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "readpast/time.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = readpast::parse_time(text);
  if (!parsed) {
    if (parsed.error().code != readpast::ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  auto again = readpast::parse_time(readpast::format_time(*parsed));
  if (!again || *again != *parsed) std::abort();
  return 0;
}
