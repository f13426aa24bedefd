// Run 41 (docs/benchmarks.md): what a long head of one queue costs the leases of another queue
// of the same Queue. Leases and completes 70,000 jobs of queue "busy" (retention 0: deleted)
// with autovacuum off on `live`, so that its head holds 70,000 dead entries, leases "busy"
// once more (that lease walks them: the lanes turn on), then times one-job leases and
// completions of queue "quiet", whose head is clean, within the 30 s the lanes stay on.
// Built against a build's libreadpast.a, from the repository's root (one command line):
//   g++ -std=c++20 -O2 -Iinclude docs/bench-results/2026-11-29/run41/quiet_beside_long_head.cpp
//       build/src/libreadpast.a -lsqlite3 -lpq -lmariadb -lcctz -lpthread -o quiet
//   ./quiet URL fill [LEASES]; ./quiet URL measure [LEASES] (quiet_beside_long_head.sh: each
//   run on a fresh schema, with autovacuum turned off on readpast.live between the two steps)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "readpast/readpast.hpp"
using namespace readpast;

namespace {
void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "failed: %s\n", what);
    std::exit(1);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: quiet URL STEP [LEASES]  (STEP: fill, measure)\n");
    return 2;
  }
  const std::string url = argv[1], step = argv[2];
  const int leases = argc > 3 ? std::atoi(argv[3]) : 5000;
  QueueOptions qo;
  qo.init_schema = true;
  qo.retention.succeeded = Duration::zero();
  auto q = Queue::open(url, qo);
  check(q.has_value(), "open");
  if (step == "fill") {
    for (const char* name : {"busy", "quiet"}) {
      const int n = std::string(name) == "busy" ? 80000 : leases + 1000;
      std::vector<NewJob> jobs;
      for (int i = 0; i < n; ++i) {
        NewJob j;
        j.queue = name;
        j.payload = std::to_string(i);
        jobs.push_back(std::move(j));
        if (jobs.size() == 1000) {
          check(q->enqueue_batch(jobs).has_value(), "enqueue");
          jobs.clear();
        }
      }
      if (!jobs.empty()) check(q->enqueue_batch(jobs).has_value(), "enqueue");
    }
    return 0;
  }
  // measure: 70,000 of busy leased and deleted; their entries stay at its head.
  for (int done = 0; done < 70000; done += 1000) {
    auto jobs = q->lease({.queue = "busy", .worker_id = "w", .max_jobs = 1000});
    check(jobs.has_value() && jobs->size() == 1000, "lease busy");
    std::vector<LeasedRef> refs;
    for (const Job& j : *jobs) refs.push_back({j.id, *j.lease_token});
    check(q->complete_batch(refs).has_value(), "complete busy");
  }
  auto one = q->lease({.queue = "busy", .worker_id = "w", .max_jobs = 1});
  check(one.has_value() && one->size() == 1, "lease busy past its head");
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < leases; ++i) {
    auto jobs = q->lease({.queue = "quiet", .worker_id = "w", .max_jobs = 1});
    check(jobs.has_value() && jobs->size() == 1, "lease quiet");
    check(q->complete((*jobs)[0].id, *(*jobs)[0].lease_token).has_value(), "complete quiet");
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("%d one-job leases and completions of quiet in %.3f s: %.0f /s, %.1f us each\n", leases, s,
         leases / s, s / leases * 1e6);
  return 0;
}
