#include "readpast/job.hpp"

#include <array>

#include "core/random_bytes.hpp"

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
  std::array<char, 16> bytes{};
  detail::fill_random(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(32);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 0xf]);
  }
  return LeaseToken(std::move(hex));
}

}  // namespace readpast
