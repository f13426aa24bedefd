// server/metrics.hpp — this server's own part of `GET /metrics` (Prometheus text, format
// 0.0.4); the queues' part comes from core/prometheus.hpp, shared with `readpast metrics`:
//   readpast_http_requests_total{code="200"}            counter: responses by status
//   readpast_http_requests_in_flight                    gauge
//
// Thread-safety: RequestMetrics is safe to use from many threads at once (atomic counters).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace readpast::server {

class RequestMetrics {
 public:
  void record(int status) noexcept;
  std::string render(std::int64_t in_flight) const;

 private:
  static constexpr int kFirstStatus = 100;
  static constexpr int kLastStatus = 599;
  std::array<std::atomic<std::uint64_t>, kLastStatus - kFirstStatus + 1> by_status_{};
};

}  // namespace readpast::server
