// core/log.hpp — how the library hands a log event to the user's Logger.
//
// Thread-safety: emit() is as thread-safe as the Logger it is given (which readpast
// requires to be callable from several threads).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "readpast/options.hpp"

namespace readpast::detail {

using LogFields = std::vector<std::pair<std::string, std::string>>;

inline void emit(const Logger& logger, LogLevel level, std::string message, LogFields fields = {}) {
  if (logger) logger(LogRecord{level, std::move(message), std::move(fields)});
}

}  // namespace readpast::detail
