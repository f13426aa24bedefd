// readpast/error.hpp — the error type and the Result<T> every operation returns.
//
// Thread-safety: Error and Result are plain values; distinct objects may be used from
// different threads freely.
//
// Policy (after DuckDB): expected outcomes — lease lost, not found, bad input, database
// busy or unreachable — come back as values. Exceptions are reserved for programming
// errors and for a job handler's own failures, which the worker catches.
#pragma once

#include <string>
#include <string_view>
#include <tl/expected.hpp>

namespace readpast {

enum class ErrorCode {
  kInvalidArgument,  // bad queue name, payload over the limit, bad URL or duration, ...
  kLeaseLost,        // the lease token is not the job's current one, or it is not running
  kNotFound,         // no such job, or a database file that does not exist
  kConflict,         // the operation contradicts the job's state (e.g. a unique key is held)
  kUnavailable,      // the database is down, busy past its timeout, or unreachable
  kSchema,           // schema missing, or newer than this build understands
  kInternal,         // anything else the database reported
};

// A stable, machine-friendly name ("lease_lost", "invalid_argument", ...).
std::string_view to_string(ErrorCode code) noexcept;

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;  // one line, fit for a human; never contains a password

  static Error invalid_argument(std::string message) {
    return {ErrorCode::kInvalidArgument, std::move(message)};
  }
  static Error lease_lost(std::string message) {
    return {ErrorCode::kLeaseLost, std::move(message)};
  }
  static Error not_found(std::string message) { return {ErrorCode::kNotFound, std::move(message)}; }
  static Error conflict(std::string message) { return {ErrorCode::kConflict, std::move(message)}; }
  static Error unavailable(std::string message) {
    return {ErrorCode::kUnavailable, std::move(message)};
  }
  static Error schema(std::string message) { return {ErrorCode::kSchema, std::move(message)}; }
  static Error internal(std::string message) { return {ErrorCode::kInternal, std::move(message)}; }

  bool is_lease_lost() const noexcept { return code == ErrorCode::kLeaseLost; }
  bool is_unavailable() const noexcept { return code == ErrorCode::kUnavailable; }
};

template <class T>
using Result = tl::expected<T, Error>;

// The result of an operation that returns nothing but may fail.
using Status = Result<void>;

inline tl::unexpected<Error> fail_with(Error error) {
  return tl::unexpected<Error>(std::move(error));
}

}  // namespace readpast
