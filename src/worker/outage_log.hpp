// worker/outage_log.hpp — says once that the database is unavailable and once that it is
// back, however many threads retry how many times in between.
//
// Thread-safety: all members may be called from any thread.
#pragma once

#include <atomic>
#include <mutex>
#include <string_view>
#include <utility>

#include "core/log.hpp"
#include "readpast/error.hpp"

namespace readpast::worker {

class OutageLog {
 public:
  explicit OutageLog(detail::LevelledLogger logger) : logger_(std::move(logger)) {}

  // A call failed with kUnavailable and will be retried: logs the first of an outage.
  void failed(std::string_view what, const Error& error);
  // A call succeeded: ends the outage, if one was going on.
  void recovered();

 private:
  const detail::LevelledLogger logger_;
  std::atomic<bool> in_outage_{false};  // fast path for recovered(); written under mu_
  std::mutex mu_;                       // serializes transitions of in_outage_
};

}  // namespace readpast::worker
