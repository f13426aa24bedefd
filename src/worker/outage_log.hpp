// worker/outage_log.hpp — says once that the database is unavailable and once that it is
// back, however many threads retry how many times in between.
//
// A database can be half there: on a full disk every read succeeds and every write that
// changes something fails. So an outage ends only when a kind of call that failed during it
// (named by `what`: "leasing", "extending leases", ...) succeeds again, not at the first
// success of anything: otherwise the reads that go on working (waiting for jobs, looking for
// due schedules) would end the outage every second and the next write would begin it again.
//
// Thread-safety: all members may be called from any thread.
#pragma once

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "core/log.hpp"
#include "readpast/error.hpp"

namespace readpast::worker {

class OutageLog {
 public:
  explicit OutageLog(detail::LevelledLogger logger) : logger_(std::move(logger)) {}

  // A call of kind `what` failed with kUnavailable and will be retried: logs the first
  // failure of an outage.
  void failed(std::string_view what, const Error& error);
  // A call of kind `what` succeeded: ends the outage when that kind failed during it.
  void recovered(std::string_view what);

 private:
  const detail::LevelledLogger logger_;
  std::atomic<bool> in_outage_{false};          // fast path for recovered(); written under mu_
  std::mutex mu_;                               // serializes transitions of in_outage_
  std::set<std::string, std::less<>> failing_;  // guarded by mu_: the kinds that failed
};

}  // namespace readpast::worker
