// bench/common.hpp — what every benchmark shares: the job payload, clocks, percentiles, the
// process's memory, and the one error type of the benchmark program.
//
// Thread-safety: free functions without state; Percentiles and Memory are plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace readpast::bench {

using Clock = std::chrono::steady_clock;

// Anything that makes a measurement meaningless (a failed statement, a lost job). The
// benchmark program reports it and stops; it is never an expected outcome.
class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& what);

// The queue every benchmark uses.
inline constexpr std::string_view kQueue = "bench";

// The peer harness' payload (node/common.js payload(i)): a JSON object of 100-104 bytes.
std::string payload(std::int64_t i);
// The same with the wall-clock time of the enqueue call appended ("t_enq", microseconds
// since the Unix epoch), for add → start latency.
std::string payload_with_time(std::int64_t i, std::int64_t enqueued_us);
// The "t_enq" of such a payload; nullopt when it has none.
std::optional<std::int64_t> enqueue_time_of(std::string_view payload);
// An INSERT of jobs from..to (inclusive) of queue kQueue into a PostgreSQL table with
// columns (queue, payload), each payload(i) built by the server: how the raw ceiling and
// readpast fill a deep queue fast. `table` is one of the bench's own constants.
std::string pg_prefill_sql(std::string_view table, std::int64_t from, std::int64_t to);

// Microseconds since the Unix epoch (the wall clock, comparable between processes).
std::int64_t wall_micros();
double seconds_since(Clock::time_point start);

struct Percentiles {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p99 = 0, p999 = 0, max = 0;
};
// Nearest-rank percentiles, as the peer harness computes them (common.js percentile()).
Percentiles percentiles(std::vector<double> values);

// The resident memory of this process, from /proc/self/status.
struct Memory {
  std::int64_t rss_kib = 0;   // VmRSS
  std::int64_t peak_kib = 0;  // VmHWM: the most it ever was
};
Memory memory_of_self();

// "1,4,8" → {1, 4, 8}; fails on anything that is not a list of positive numbers.
std::vector<std::int64_t> parse_list(std::string_view text);

// Median of non-empty values.
double median(std::vector<double> values);
// The size of a SQLite database file and its WAL, in bytes (a missing file counts 0).
std::int64_t sqlite_file_bytes(const std::string& path);
// The SQL that sums what PostgreSQL's relations of `schema` take on disk.
std::string pg_schema_bytes_sql(std::string_view schema);

}  // namespace readpast::bench
