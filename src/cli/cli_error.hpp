// cli/cli_error.hpp — how a command ends: its exit code and its one-line reason.
//
// Exit codes (a contract, see docs/design.md "Exit codes"): 0 success; 2 a malformed
// command line, found before anything touches the database (unknown command or option, a
// missing or malformed value: duration, size, time, URL, queue name, state, conflicting
// options); 1 any failure while doing the work (database missing or unreachable, job not
// found, payload over the limit, lease lost, ...).
//
// Thread-safety: plain values.
#pragma once

#include <string>
#include <tl/expected.hpp>

#include "readpast/error.hpp"

namespace readpast::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct CliError {
  int exit_code = kExitFailure;
  std::string message;  // one line, without the "readpast: " prefix
};

inline CliError usage_error(std::string message) {
  return {kExitUsage, std::move(message)};
}
inline CliError failure(std::string message) {
  return {kExitFailure, std::move(message)};
}
// A library error met while doing the work.
inline CliError failure(const Error& error) {
  return {kExitFailure, error.message};
}

template <class T>
using CliResult = tl::expected<T, CliError>;
using CliStatus = CliResult<void>;

inline tl::unexpected<CliError> fail_cli(CliError error) {
  return tl::unexpected<CliError>(std::move(error));
}

}  // namespace readpast::cli
