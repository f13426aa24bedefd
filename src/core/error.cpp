#include "readpast/error.hpp"

#include "readpast/options.hpp"

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

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

}  // namespace readpast
