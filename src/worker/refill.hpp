// worker/refill.hpp — when a queue's fetcher leases more jobs (see runtime.hpp).
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <utility>

namespace readpast::worker {

// Whether a fetcher whose queue runs `concurrency` handler threads with `prefetch` jobs
// held ahead, and holds `held` jobs of which `ready` wait for a thread, should lease now.
//
// Without prefetch a free slot is a handler thread without a job (ready is then shorter
// than concurrency): lease at once. With prefetch, jobs still wait for threads, so there
// is no hurry: lease once a thread may soon find none (ready shorter than concurrency) or
// half the capacity is free. Short jobs then come in leases of half the capacity, instead
// of one lease per job as each finishes, which cost a round trip and a statement per job.
constexpr bool should_lease(int concurrency, int prefetch, int held, std::size_t ready) {
  const int capacity = concurrency + prefetch;
  const int free = capacity - held;
  if (free <= 0) return false;
  return std::cmp_less(ready, concurrency) || free >= (capacity + 1) / 2;
}

}  // namespace readpast::worker
