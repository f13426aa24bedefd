// core/log.hpp — how the library hands a log event to the user's Logger.
//
// Thread-safety: emit() and LevelledLogger are as thread-safe as the Logger they are given
// (which readpast requires to be callable from several threads).
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

// A Logger and the least level it is sent (WorkerOptions::log_level). The level is checked
// here, where every event passes, so that no call site can forget it; logs() lets a call
// site skip building an event that would be dropped.
class LevelledLogger {
 public:
  LevelledLogger(Logger logger, LogLevel least) : logger_(std::move(logger)), least_(least) {}

  bool logs(LogLevel level) const { return logger_ && level >= least_; }
  void emit(LogLevel level, std::string message, LogFields fields = {}) const {
    if (logs(level)) detail::emit(logger_, level, std::move(message), std::move(fields));
  }

 private:
  Logger logger_;
  LogLevel least_;
};

}  // namespace readpast::detail
