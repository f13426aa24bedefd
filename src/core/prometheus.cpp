#include "core/prometheus.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <tuple>
#include <utility>

#include "core/queue_metrics.hpp"

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

std::string prometheus_storage_text(const StorageHealth& health) {
  std::string out =
      "# HELP readpast_storage_bytes What each table of the storage takes on disk, indexes "
      "included.\n# TYPE readpast_storage_bytes gauge\n";
  for (const StorageSize& size : health.sizes) {
    out += fmt::format("readpast_storage_bytes{{relation=\"{}\"}} {}\n",
                       prometheus_label(size.relation), size.bytes);
  }
  if (!health.oldest_snapshot) return out;
  const SnapshotHolder& holder = *health.oldest_snapshot;
  if (holder.age) {
    out += fmt::format(
        "# HELP readpast_oldest_snapshot_age_seconds How long the transaction of the oldest "
        "snapshot, which keeps old row versions from being reclaimed, has been open.\n"
        "# TYPE readpast_oldest_snapshot_age_seconds gauge\n"
        "readpast_oldest_snapshot_age_seconds {}\n",
        std::chrono::duration<double>(*holder.age).count());
  }
  if (holder.transactions) {
    out += fmt::format(
        "# HELP readpast_oldest_snapshot_transactions Transactions started since the oldest "
        "snapshot that keeps old row versions from being reclaimed.\n"
        "# TYPE readpast_oldest_snapshot_transactions gauge\n"
        "readpast_oldest_snapshot_transactions {}\n",
        *holder.transactions);
  }
  return out;
}

namespace {

std::string series_labels(const MetricSample& sample) {
  std::string labels;
  auto add = [&](std::string_view name, std::string_view value) {
    labels += labels.empty() ? "{" : ",";
    labels += fmt::format("{}=\"{}\"", name, prometheus_label(value));
  };
  if (!sample.queue.empty()) add("queue", sample.queue);
  if (!sample.label.empty()) add(sample.label, sample.label_value);
  if (!labels.empty()) labels += "}";
  return labels;
}

double bucket_bound(const std::string& le) {
  if (le == "+Inf") return std::numeric_limits<double>::infinity();
  return std::strtod(le.c_str(), nullptr);
}

}  // namespace

std::string prometheus_recorded_text(const std::vector<MetricSample>& samples) {
  std::string out;
  for (const MetricFamily& family : recorded_metric_families()) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family.name, family.help, family.name,
                       family.type);
    if (family.type != "histogram") {
      for (const MetricSample& s : samples) {
        if (s.name == family.name)
          out += fmt::format("{}{} {}\n", s.name, series_labels(s), s.value);
      }
      continue;
    }
    const std::string bucket = fmt::format("{}_bucket", family.name);
    const std::string sum = fmt::format("{}_sum", family.name);
    const std::string count = fmt::format("{}_count", family.name);
    std::vector<const MetricSample*> rows;
    for (const MetricSample& s : samples) {
      if (s.name == bucket || s.name == sum || s.name == count) rows.push_back(&s);
    }
    // Per queue: the buckets by bound, then _sum, then _count.
    auto rank = [&](const MetricSample* s) {
      const int part = s->name == bucket ? 0 : s->name == sum ? 1 : 2;
      return std::tuple<const std::string&, int, double>(
          s->queue, part, part == 0 ? bucket_bound(s->label_value) : 0.0);
    };
    std::sort(rows.begin(), rows.end(),
              [&](const MetricSample* a, const MetricSample* b) { return rank(a) < rank(b); });
    for (const MetricSample* s : rows) {
      if (s->name == sum) {
        out += fmt::format("{}{} {}\n", s->name, series_labels(*s),
                           static_cast<double>(s->value) / 1e6);
      } else {
        out += fmt::format("{}{} {}\n", s->name, series_labels(*s), s->value);
      }
    }
  }
  return out;
}

}  // namespace readpast::detail
