// Run 54 (docs/benchmarks.md): the settles whose statements schema 19 changed, before and
// after. One process, one connection at a time, on a fresh schema; each phase timed on its own
// and printed as jobs/s:
//   retry_now     N due jobs leased 100 at a time and failed with no delay (updated in live)
//   retry_later   N due jobs leased 100 at a time and failed with a 1-hour retry (schema 19:
//                 moved to scheduled by fail itself; schema 18: updated, then moved by a trigger)
//   dead          N due jobs leased 100 at a time and failed for good (moved to done)
//   release_now   N/10 due jobs leased and released one at a time, no delay
//   release_later N/10 due jobs leased and released one at a time with a 1-hour delay
// Built against a build's libreadpast.a, from the repository's root (one command line):
//   g++ -std=c++20 -O2 -Iinclude docs/bench-results/2026-12-07/run54/settles.cpp
//       build/src/libreadpast.a -lsqlite3 -lpq -lmariadb -lcctz -lpthread -o settles
//   ./settles URL [N]   (run 44's keyed.sh alternates two builds on one cluster)
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

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void enqueue_batches(Queue& q, const std::string& queue, int n) {
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; i += 500) {
    jobs.clear();
    for (int k = i; k < std::min(n, i + 500); ++k) {
      NewJob j;
      j.queue = queue;
      j.payload = "{\"n\":" + std::to_string(k) + "}";
      jobs.push_back(std::move(j));
    }
    check(q.enqueue_batch(jobs).has_value(), "enqueue_batch");
  }
}

// Leases `queue` 100 at a time and fails each batch with `options` until n failures are in.
double fail_phase(Queue& q, const std::string& queue, int n, const FailOptions& options) {
  enqueue_batches(q, queue, n);
  int failed = 0;
  const auto t = std::chrono::steady_clock::now();
  while (failed < n) {
    auto leased = q.lease({.queue = queue, .worker_id = "w", .max_jobs = 100});
    check(leased.has_value() && !leased->empty(), "lease to fail");
    std::vector<FailRequest> failures;
    for (const Job& j : *leased) failures.push_back({j.id, *j.lease_token, "boom", options});
    check(q.fail_batch(failures).has_value(), "fail");
    failed += static_cast<int>(failures.size());
  }
  return failed / seconds_since(t);
}

double release_phase(Queue& q, const std::string& queue, int n, Duration delay) {
  enqueue_batches(q, queue, n);
  const auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    auto leased = q.lease({.queue = queue, .worker_id = "w", .max_jobs = 1});
    check(leased.has_value() && leased->size() == 1, "lease to release");
    check(q.release((*leased)[0].id, *(*leased)[0].lease_token, delay).has_value(), "release");
  }
  return n / seconds_since(t);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: settles URL [N]\n");
    return 2;
  }
  const std::string url = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 20000;
  QueueOptions qo;
  qo.init_schema = true;
  auto q = Queue::open(url, qo);
  check(q.has_value(), "open");

  FailOptions now;
  now.retry_after = Duration::zero();
  FailOptions later;
  later.retry_after = std::chrono::hours(1);
  FailOptions for_good;
  for_good.no_retry = true;
  const double retry_now = fail_phase(*q, "now", n, now);
  const double retry_later = fail_phase(*q, "later", n, later);
  const double dead = fail_phase(*q, "dead", n, for_good);
  const double release_now = release_phase(*q, "release_now", n / 10, Duration::zero());
  const double release_later = release_phase(*q, "release_later", n / 10, std::chrono::hours(1));
  printf("retry_now %.0f retry_later %.0f dead %.0f release_now %.0f release_later %.0f\n",
         retry_now, retry_later, dead, release_now, release_later);
  return 0;
}
