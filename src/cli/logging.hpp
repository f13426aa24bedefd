// cli/logging.hpp — where log lines go: spdlog, through the Console, to stderr. The
// library never prints; it gets a readpast::Logger that forwards here. Every line has the
// process's known secrets scrubbed out, and the library's messages (which carry a job's
// error: a command's stderr) are escaped for the terminal like any text from outside.
//
// Thread-safety: the loggers returned are thread-safe (spdlog's mutex sink over a
// thread-safe Console).
#pragma once

#include <spdlog/logger.h>

#include <memory>

#include "cli/console.hpp"
#include "core/secret_scrubber.hpp"
#include "readpast/options.hpp"

namespace readpast::cli {

enum class LogStyle {
  kPlain,        // "readpast: message" — one-shot commands
  kTimestamped,  // "2026-11-22 10:00:00.123 warning: message" — the long-running worker
  kJson,         // {"time": "...", "level": "info", "msg": "...", "job_id": 7, ...}
};

// The lowest level shown at a verbosity: 0 info, 1 (-v) debug, -1 (-q) warnings.
LogLevel lowest_level_shown(int verbosity);

// verbosity: 0 shows info and above, 1 (-v) debug, -1 (-q) warnings and errors only.
// `console` must outlive the logger.
std::shared_ptr<spdlog::logger> make_logger(Console& console, LogStyle style, int verbosity,
                                            detail::SecretScrubber secrets);

// The library's Logger, forwarding to `logger`. In the JSON style each event's fields
// become keys of its line (in the text styles they are already part of the message).
// `console` must outlive the Logger.
Logger library_logger(std::shared_ptr<spdlog::logger> logger, LogStyle style, Console& console,
                      detail::SecretScrubber secrets);

}  // namespace readpast::cli
