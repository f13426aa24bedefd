// cli/arguments.hpp — turns command-line text into typed values; every failure here is a
// usage error (exit 2) naming the option.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "cli/cli_error.hpp"
#include "readpast/job.hpp"
#include "readpast/time.hpp"

namespace readpast::cli {

// DUR: "500ms", "30s", "1m30s", "1.5h", "7d"; "0" with no unit too.
CliResult<Duration> parse_duration_arg(std::string_view option, std::string_view text);
// As above, and more than zero.
CliResult<Duration> parse_positive_duration_arg(std::string_view option, std::string_view text);
// TIME: RFC 3339.
CliResult<TimePoint> parse_time_arg(std::string_view option, std::string_view text);
// SIZE: a number of bytes with an optional unit: B, KB, MB, GB (powers of 1000) or KiB,
// MiB, GiB (powers of 1024); "16MiB", "1000000", "512KiB". Must be more than zero.
CliResult<std::size_t> parse_size_arg(std::string_view option, std::string_view text);
std::optional<std::size_t> parse_size(std::string_view text);
// A stored state name; `allowed` lists the acceptable ones for the message and the check.
CliResult<JobState> parse_state_arg(std::string_view option, std::string_view text,
                                    std::initializer_list<JobState> allowed);
CliStatus check_queue_name(std::string_view name);
// A database URL that parses ("sqlite:PATH", "postgresql://..."); the message never
// shows a password.
CliStatus check_database_url(std::string_view url);

// "16 MiB", "1.5 KiB", "300 bytes".
std::string format_size(std::size_t bytes);

}  // namespace readpast::cli
