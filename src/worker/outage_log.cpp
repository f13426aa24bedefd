#include "worker/outage_log.hpp"

namespace readpast::worker {

void OutageLog::failed(std::string_view what, const Error& error) {
  {
    std::lock_guard lock(mu_);
    if (failing_.find(what) == failing_.end()) failing_.emplace(what);
    if (in_outage_.load(std::memory_order_relaxed)) return;
    in_outage_.store(true, std::memory_order_relaxed);
  }
  logger_.emit(LogLevel::kWarn,
               "database unavailable (" + std::string(what) + ": " + error.message +
                   "); retrying until it is back",
               {{"event", "database_unavailable"}, {"error", error.message}});
}

void OutageLog::recovered(std::string_view what) {
  if (!in_outage_.load(std::memory_order_relaxed)) return;
  {
    std::lock_guard lock(mu_);
    if (!in_outage_.load(std::memory_order_relaxed)) return;
    if (failing_.find(what) == failing_.end()) return;  // proves nothing about what failed
    in_outage_.store(false, std::memory_order_relaxed);
    failing_.clear();
  }
  logger_.emit(LogLevel::kInfo, "database available again", {{"event", "database_available"}});
}

}  // namespace readpast::worker
