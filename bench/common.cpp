#include "common.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace readpast::bench {

void fail(const std::string& what) {
  throw BenchError(what);
}

std::string payload(std::int64_t i) {
  const std::string user = std::to_string(100000 + i % 900000);
  return "{\"seq\":" + std::to_string(i) + ",\"user_id\":" + user +
         ",\"action\":\"send_welcome_email\",\"email\":\"user" + user +
         "@example.com\",\"locale\":\"en-GB\"}";
}

std::string pg_prefill_sql(std::string_view table, std::int64_t from, std::int64_t to) {
  // The same text as payload(i), written in SQL.
  return "INSERT INTO " + std::string(table) + " (queue, payload) SELECT '" + std::string(kQueue) +
         "', convert_to('{\"seq\":' || i || ',\"user_id\":' || (100000 + i % 900000) || "
         "',\"action\":\"send_welcome_email\",\"email\":\"user' || (100000 + i % 900000) || "
         "'@example.com\",\"locale\":\"en-GB\"}', 'UTF8') FROM generate_series(" +
         std::to_string(from) + ", " + std::to_string(to) + ") AS i";
}

std::string payload_with_time(std::int64_t i, std::int64_t enqueued_us) {
  std::string text = payload(i);
  text.pop_back();  // the closing brace
  return text + ",\"t_enq\":" + std::to_string(enqueued_us) + "}";
}

std::optional<std::int64_t> enqueue_time_of(std::string_view payload) {
  constexpr std::string_view kKey = "\"t_enq\":";
  const auto at = payload.rfind(kKey);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = payload.data() + at + kKey.size();
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(begin, payload.data() + payload.size(), value);
  if (ec != std::errc() || end == begin) return std::nullopt;
  return value;
}

std::int64_t wall_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Percentiles percentiles(std::vector<double> values) {
  Percentiles p;
  p.count = values.size();
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto rank = [&](double q) {
    const auto index = static_cast<std::size_t>(
        std::max(0.0, std::ceil(q / 100.0 * static_cast<double>(values.size())) - 1));
    return values[std::min(index, values.size() - 1)];
  };
  double sum = 0;
  for (double v : values) sum += v;
  p.mean = sum / static_cast<double>(values.size());
  p.p50 = rank(50);
  p.p99 = rank(99);
  p.p999 = rank(99.9);
  p.max = values.back();
  return p;
}

Memory memory_of_self() {
  Memory memory;
  std::ifstream status("/proc/self/status");
  std::string line;
  auto kib = [](const std::string& text) {
    std::int64_t value = 0;
    const auto digits = text.find_first_of("0123456789");
    if (digits != std::string::npos) {
      std::from_chars(text.data() + digits, text.data() + text.size(), value);
    }
    return value;
  };
  while (std::getline(status, line)) {
    if (line.starts_with("VmRSS:")) memory.rss_kib = kib(line);
    if (line.starts_with("VmHWM:")) memory.peak_kib = kib(line);
  }
  return memory;
}

std::vector<std::int64_t> parse_list(std::string_view text) {
  std::vector<std::int64_t> values;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = text.substr(0, comma);
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || end != item.data() + item.size() || value <= 0) {
      fail("not a list of positive numbers: '" + std::string(text) + "'");
    }
    values.push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return values;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::int64_t sqlite_file_bytes(const std::string& path) {
  std::int64_t total = 0;
  for (const std::string& file : {path, path + "-wal"}) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    if (!ec) total += static_cast<std::int64_t>(size);
  }
  return total;
}

std::string pg_schema_bytes_sql(std::string_view schema) {
  // (A partitioned table's own size is 0: its partitions are relations of their own.)
  return "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
         "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '" +
         std::string(schema) + "' AND c.relkind IN ('r', 'm')";
}

}  // namespace readpast::bench
