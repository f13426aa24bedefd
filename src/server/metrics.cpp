#include "server/metrics.hpp"

#include <fmt/format.h>

#include <chrono>

namespace readpast::server {

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_queue_metrics(const std::vector<QueueStats>& stats) {
  std::string out;
  out +=
      "# HELP readpast_jobs Jobs per queue and state (available includes scheduled).\n"
      "# TYPE readpast_jobs gauge\n";
  for (const auto& s : stats) {
    const std::string queue = escape_label_value(s.queue);
    const std::pair<const char*, std::int64_t> counts[] = {
        {"available", s.available}, {"scheduled", s.scheduled}, {"running", s.running},
        {"succeeded", s.succeeded}, {"dead", s.dead},           {"cancelled", s.cancelled},
    };
    for (const auto& [state, count] : counts) {
      out += fmt::format("readpast_jobs{{queue=\"{}\",state=\"{}\"}} {}\n", queue, state, count);
    }
  }
  out +=
      "# HELP readpast_queue_oldest_available_age_seconds Age of the oldest job that is due "
      "and waiting.\n"
      "# TYPE readpast_queue_oldest_available_age_seconds gauge\n";
  for (const auto& s : stats) {
    out += fmt::format("readpast_queue_oldest_available_age_seconds{{queue=\"{}\"}} {}\n",
                       escape_label_value(s.queue),
                       std::chrono::duration<double>(s.oldest_available_age).count());
  }
  out +=
      "# HELP readpast_queue_paused 1 when the queue is paused (hands out no jobs).\n"
      "# TYPE readpast_queue_paused gauge\n";
  for (const auto& s : stats) {
    out += fmt::format("readpast_queue_paused{{queue=\"{}\"}} {}\n", escape_label_value(s.queue),
                       s.paused ? 1 : 0);
  }
  return out;
}

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
