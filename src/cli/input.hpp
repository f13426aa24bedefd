// cli/input.hpp — payloads from stdin, read as bytes (NUL and invalid UTF-8 included).
//
// Thread-safety: reads fd 0; call from one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "cli/cli_error.hpp"

namespace readpast::cli {

// All of stdin as one payload. Stops reading and fails (exit 1) once more than `limit`
// bytes arrived, so an oversized input is never held in memory whole.
CliResult<std::string> read_stdin_payload(std::size_t limit);

// Splits stdin at '\n' and calls on_line(line, line_number) for every non-empty line
// (without its '\n'), in order. A line over `limit` bytes fails with its line number.
// Stops at the first error of on_line and returns it.
CliStatus read_stdin_lines(std::size_t limit,
                           const std::function<CliStatus(std::string&&, std::size_t)>& on_line);

}  // namespace readpast::cli
