#include "core/prometheus.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <utility>

namespace readpast::detail {

std::string prometheus_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string prometheus_text(const std::vector<QueueStats>& stats) {
  std::string out;
  out += "# HELP readpast_jobs Jobs per queue and state.\n# TYPE readpast_jobs gauge\n";
  for (const auto& s : stats) {
    const std::string queue = prometheus_label(s.queue);
    const std::array<std::pair<std::string_view, std::int64_t>, 5> counts = {{
        {"available", s.available},
        {"running", s.running},
        {"succeeded", s.succeeded},
        {"dead", s.dead},
        {"cancelled", s.cancelled},
    }};
    for (const auto& [state, n] : counts) {
      out += fmt::format("readpast_jobs{{queue=\"{}\",state=\"{}\"}} {}\n", queue, state, n);
    }
  }
  out +=
      "# HELP readpast_jobs_scheduled Available jobs whose run_at is in the future.\n"
      "# TYPE readpast_jobs_scheduled gauge\n";
  for (const auto& s : stats) {
    out += fmt::format("readpast_jobs_scheduled{{queue=\"{}\"}} {}\n", prometheus_label(s.queue),
                       s.scheduled);
  }
  out +=
      "# HELP readpast_jobs_expired Running jobs whose lease has passed and that no rescue has "
      "moved yet.\n"
      "# TYPE readpast_jobs_expired gauge\n";
  for (const auto& s : stats) {
    out += fmt::format("readpast_jobs_expired{{queue=\"{}\"}} {}\n", prometheus_label(s.queue),
                       s.expired);
  }
  out +=
      "# HELP readpast_queue_oldest_available_age_seconds Age of the oldest job that is due "
      "and waiting.\n# TYPE readpast_queue_oldest_available_age_seconds gauge\n";
  for (const auto& s : stats) {
    out += fmt::format("readpast_queue_oldest_available_age_seconds{{queue=\"{}\"}} {}\n",
                       prometheus_label(s.queue),
                       std::chrono::duration<double>(s.oldest_available_age).count());
  }
  out +=
      "# HELP readpast_queue_paused 1 when the queue is paused.\n"
      "# TYPE readpast_queue_paused gauge\n";
  for (const auto& s : stats) {
    out += fmt::format("readpast_queue_paused{{queue=\"{}\"}} {}\n", prometheus_label(s.queue),
                       s.paused ? 1 : 0);
  }
  return out;
}

}  // namespace readpast::detail
