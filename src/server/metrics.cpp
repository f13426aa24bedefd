#include "server/metrics.hpp"

#include <fmt/format.h>

namespace readpast::server {

void RequestMetrics::record(int status) noexcept {
  if (status < kFirstStatus || status > kLastStatus) return;
  by_status_[static_cast<std::size_t>(status - kFirstStatus)].fetch_add(1,
                                                                        std::memory_order_relaxed);
}

std::string RequestMetrics::render(std::int64_t in_flight) const {
  std::string out =
      "# HELP readpast_http_requests_total HTTP responses of this server by status code.\n"
      "# TYPE readpast_http_requests_total counter\n";
  for (std::size_t i = 0; i < by_status_.size(); ++i) {
    auto count = by_status_[i].load(std::memory_order_relaxed);
    if (count == 0) continue;
    out += fmt::format("readpast_http_requests_total{{code=\"{}\"}} {}\n",
                       static_cast<int>(i) + kFirstStatus, count);
  }
  out += fmt::format(
      "# HELP readpast_http_requests_in_flight Requests this server is handling now.\n"
      "# TYPE readpast_http_requests_in_flight gauge\n"
      "readpast_http_requests_in_flight {}\n",
      in_flight);
  return out;
}

}  // namespace readpast::server
