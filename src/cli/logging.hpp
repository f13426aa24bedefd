// cli/logging.hpp — where log lines go: spdlog, through the Console, to stderr. The
// library never prints; it gets a readpast::Logger that forwards here.
//
// Thread-safety: the logger returned is thread-safe (spdlog's mutex sink over a
// thread-safe Console).
#pragma once

#include <spdlog/logger.h>

#include <memory>

#include "cli/console.hpp"
#include "readpast/options.hpp"

namespace readpast::cli {

enum class LogStyle {
  kPlain,        // "readpast: message" — one-shot commands
  kTimestamped,  // "2026-11-22 10:00:00.123 warning: message" — the long-running worker
};

// verbosity: 0 shows info and above, 1 (-v) debug, -1 (-q) warnings and errors only.
// `console` must outlive the logger.
std::shared_ptr<spdlog::logger> make_logger(Console& console, LogStyle style, int verbosity);

// The library's Logger, forwarding to `logger`.
Logger library_logger(std::shared_ptr<spdlog::logger> logger);

}  // namespace readpast::cli
