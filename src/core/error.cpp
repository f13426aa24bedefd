#include "readpast/error.hpp"

namespace readpast {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kLeaseLost:
      return "lease_lost";
    case ErrorCode::kNotFound:
      return "not_found";
    case ErrorCode::kConflict:
      return "conflict";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kSchema:
      return "schema";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "internal";
}

}  // namespace readpast
