// The other values the command line parses: --max-payload sizes, queue names, job states.
// None throws or crashes; a size is within [1, 10^15] bytes; a queue name is accepted
// exactly when it matches [A-Za-z0-9][A-Za-z0-9_.-]{0,127}.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cli/arguments.hpp"
#include "readpast/queue.hpp"

namespace {

bool reference_queue_name(std::string_view name) {
  auto alnum = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  };
  if (name.empty() || name.size() > 128 || !alnum(name[0])) return false;
  for (char c : name.substr(1)) {
    if (!alnum(c) && c != '_' && c != '.' && c != '-') return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto bytes = readpast::cli::parse_size(text)) {
    if (*bytes < 1 || *bytes > 1'000'000'000'000'000ULL) std::abort();
  }
  (void)readpast::cli::parse_size_arg("--max-payload", text);
  const bool accepted = readpast::validate_queue_name(text).has_value();
  if (accepted != reference_queue_name(text)) std::abort();
  if (readpast::cli::check_queue_name(text).has_value() != accepted) std::abort();
  (void)readpast::parse_job_state(text);
  (void)readpast::cli::parse_state_arg("--state", text,
                                       {readpast::JobState::kDead, readpast::JobState::kCancelled});
  (void)readpast::LeaseToken::from_hex(text);
  return 0;
}
