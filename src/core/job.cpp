#include "readpast/job.hpp"

#include <array>

#include "core/lease_tokens.hpp"
#include "core/random_bytes.hpp"
#include "readpast/options.hpp"

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
    case JobState::kWaiting:
      return "waiting";
  }
  return "available";
}

std::optional<JobState> parse_job_state(std::string_view text) noexcept {
  for (auto state : {JobState::kAvailable, JobState::kRunning, JobState::kSucceeded,
                     JobState::kDead, JobState::kCancelled, JobState::kWaiting}) {
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
  std::array<char, detail::kLeaseTokenBytes> bytes{};
  detail::fill_random(bytes);
  std::string hex(detail::kLeaseTokenHexDigits, '\0');
  detail::write_token_hex(bytes, std::span<char, detail::kLeaseTokenHexDigits>(hex));
  return LeaseToken(std::move(hex));
}

std::string_view to_string(ListView view) noexcept {
  switch (view) {
    case ListView::kScheduled:
      return "scheduled";
    case ListView::kRetrying:
      return "retrying";
    case ListView::kExpired:
      return "expired";
  }
  return "scheduled";
}

std::optional<ListView> parse_list_view(std::string_view text) noexcept {
  for (ListView view : {ListView::kScheduled, ListView::kRetrying, ListView::kExpired}) {
    if (text == to_string(view)) return view;
  }
  return std::nullopt;
}

}  // namespace readpast
