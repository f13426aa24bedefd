// bench/harness.hpp — readpast as one more system of the peer harness
// (shared/peers/README.md, "Adding our implementation"): the same procedure and metric
// names as its pg-boss and graphile-worker parts, configured by its BENCH_* environment.
#pragma once

#include <string>
#include <vector>

namespace readpast::bench {

// parts: any of "enqueue", "drain", "latency" (all when empty). Prints JSON lines on
// stdout; returns the exit code.
int harness_main(const std::vector<std::string>& parts);

}  // namespace readpast::bench
