// worker/refill.hpp — when a queue's fetchers lease more jobs, and how many (see runtime.hpp).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <utility>

namespace readpast::worker {

// A queue runs `concurrency` handler threads with `prefetch` jobs held ahead: a capacity of
// concurrency + prefetch slots. Of the jobs its worker holds (or has asked for in a lease
// still in flight, which count as held), `unfinished` wait for a thread or run (`ready` of
// them wait), and `settling` have finished and wait for their settling call (the
// completer's batch, a fail, a release).
//
// The slots free now. Without prefetch a job holds its slot until it is settled, so that a
// worker never holds more leases than it has threads (what the database shows as running
// is what runs, or has just finished). With prefetch, which asks for leases ahead anyway, a
// finished job frees its slot at once: counting it until its completion was recorded made
// every job hold a slot for a lease round trip and a completion round trip, and bound a
// worker of short jobs to capacity / (the two round trips) jobs a second. The settling
// ones are then bounded by settling_limit instead.
constexpr int free_slots(int concurrency, int prefetch, int unfinished, int settling) {
  return concurrency + prefetch - unfinished - (prefetch > 0 ? 0 : settling);
}

// How many finished jobs may wait for their settling call before the fetcher stops leasing
// (the database falls behind recording them). Four times the capacity: the completer sends
// what waits when its previous batch returns, and with short jobs a batch in flight held one
// and a half capacities in run 55's trace (762 jobs with a capacity of 508, docs/benchmarks.md)
// while the next one formed beside it. At twice the capacity the fetchers then stopped and
// the server ran the completion alone for its round trip; at one capacity that happened on
// every batch (run 41). Without prefetch a settling job holds its slot anyway (free_slots),
// which bounds them tighter.
constexpr int settling_limit(int concurrency, int prefetch) {
  return 4 * (concurrency + prefetch);
}

// Whether the fetcher should lease now.
//
// Without prefetch a free slot is a handler thread without a job (ready is then shorter
// than concurrency): lease at once. With prefetch, jobs still wait for threads, so there
// is no hurry: lease once a thread may soon find none (ready shorter than concurrency) or
// half the capacity is free. Short jobs then come in leases of half the capacity, instead
// of one lease per job as each finishes, which cost a round trip and a statement per job.
// When settling_limit finished jobs wait for their settling call, the fetcher waits.
constexpr bool should_lease(int concurrency, int prefetch, int unfinished, std::size_t ready,
                            int settling) {
  const int capacity = concurrency + prefetch;
  const int free = free_slots(concurrency, prefetch, unfinished, settling);
  if (free <= 0 || settling >= settling_limit(concurrency, prefetch)) return false;
  return std::cmp_less(ready, concurrency) || free >= (capacity + 1) / 2;
}

// Whether a queue gets a second fetcher that overlaps the first one's leases: only with
// prefetch, where jobs are leased ahead in batches and a batch's round trip and statement
// would otherwise leave the threads of short jobs waiting.
constexpr bool overlaps_leases(int prefetch) {
  return prefetch > 0;
}

// The most one lease asks for. While leases come back full (a backlog: the second fetcher
// overlaps them), half the capacity, so that two leases can be in flight at once; a lease
// of all the free capacity would leave the second fetcher crumbs, leases of a job or two,
// each a statement of its own. Otherwise (the first lease, or the queue ran short) the
// whole capacity, so that a worker holds its full prefetch ahead whenever jobs are there.
constexpr int lease_size(int concurrency, int prefetch, bool last_lease_full) {
  const int capacity = concurrency + prefetch;
  return overlaps_leases(prefetch) && last_lease_full ? (capacity + 1) / 2 : capacity;
}

// Whether the second fetcher leases now, on top of should_lease's rule (whose `unfinished`
// includes `asking`): only while a lease of `asking` jobs is in flight, when the last lease
// came back with all it asked for (more jobs are likely due: an empty or short queue gets
// no second lease), and when a whole lease_size is free, never the crumbs.
constexpr bool should_overlap(int concurrency, int prefetch, int unfinished, std::size_t ready,
                              int settling, int asking, bool last_lease_full) {
  return overlaps_leases(prefetch) && asking > 0 && last_lease_full &&
         free_slots(concurrency, prefetch, unfinished, settling) >=
             lease_size(concurrency, prefetch, last_lease_full) &&
         should_lease(concurrency, prefetch, unfinished, ready, settling);
}

}  // namespace readpast::worker
