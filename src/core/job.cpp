#include "readpast/job.hpp"

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <stdexcept>

namespace readpast {

std::string_view to_string(JobState state) noexcept {
  switch (state) {
    case JobState::kAvailable:
      return "available";
    case JobState::kRunning:
      return "running";
    case JobState::kSucceeded:
      return "succeeded";
    case JobState::kDead:
      return "dead";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "available";
}

std::optional<JobState> parse_job_state(std::string_view text) noexcept {
  for (auto state : {JobState::kAvailable, JobState::kRunning, JobState::kSucceeded,
                     JobState::kDead, JobState::kCancelled}) {
    if (to_string(state) == text) return state;
  }
  return std::nullopt;
}

bool is_finished(JobState state) noexcept {
  return state == JobState::kSucceeded || state == JobState::kDead || state == JobState::kCancelled;
}

Result<LeaseToken> LeaseToken::from_hex(std::string_view hex) {
  if (hex.size() != 32) {
    return fail_with(Error::invalid_argument("bad lease token: expected 32 hex digits"));
  }
  std::string lower(hex);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return fail_with(Error::invalid_argument("bad lease token: expected 32 hex digits"));
    }
  }
  return LeaseToken(std::move(lower));
}

LeaseToken LeaseToken::random() {
  std::array<unsigned char, 16> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    ssize_t n = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");  // no entropy source: a broken system
    }
    filled += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(32);
  for (unsigned char b : bytes) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xf]);
  }
  return LeaseToken(std::move(hex));
}

}  // namespace readpast
