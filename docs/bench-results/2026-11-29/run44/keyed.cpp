// Run 44 (docs/benchmarks.md): what unique keys cost on PostgreSQL, before and after schema 15
// moved them from a partial unique index of `live` into `unique_keys`. One process, one
// connection at a time, on a fresh schema; each phase timed on its own and printed as jobs/s:
//   single     enqueue N/10 jobs one by one, each with a key of its own
//   batch      enqueue N jobs in batches of 500, each with a key of its own
//   held       enqueue N/10 jobs one by one whose keys are held (each hands back its holder)
//   drain      lease 100 at a time and complete every job (retention 0: deleted)
//   plain      enqueue N jobs in batches of 500 without keys, then drain them the same way
// Built against a build's libreadpast.a, from the repository's root (one command line):
//   g++ -std=c++20 -O2 -Iinclude docs/bench-results/2026-11-29/run44/keyed.cpp
//       build/src/libreadpast.a -lsqlite3 -lpq -lmariadb -lcctz -lpthread -o keyed
//   ./keyed URL [N]   (keyed.sh alternates two builds on one cluster)
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

NewJob make(const std::string& queue, int i, bool keyed) {
  NewJob j;
  j.queue = queue;
  j.payload = "{\"n\":" + std::to_string(i) + "}";
  if (keyed) j.unique_key = "key-" + std::to_string(i);
  return j;
}

// Enqueues jobs first..last-1 of `queue`, in batches of `batch` (1: one by one).
void enqueue(Queue& q, const std::string& queue, int first, int last, int batch, bool keyed,
             bool expect_inserted) {
  std::vector<NewJob> jobs;
  for (int i = first; i < last; i += batch) {
    jobs.clear();
    for (int k = i; k < std::min(last, i + batch); ++k) jobs.push_back(make(queue, k, keyed));
    if (batch == 1) {
      auto r = q.enqueue(jobs[0]);
      check(r.has_value() && r->inserted == expect_inserted, "enqueue");
    } else {
      auto r = q.enqueue_batch(jobs);
      check(r.has_value(), "enqueue_batch");
      for (const auto& e : *r) check(e.inserted == expect_inserted, "inserted");
    }
  }
}

int drain(Queue& q, const std::string& queue) {
  int done = 0;
  for (;;) {
    auto leased = q.lease({.queue = queue, .worker_id = "w", .max_jobs = 100});
    check(leased.has_value(), "lease");
    if (leased->empty()) return done;
    std::vector<LeasedRef> completions;
    for (const Job& j : *leased) completions.push_back({j.id, *j.lease_token});
    check(q.complete_batch(completions).has_value(), "complete");
    done += static_cast<int>(leased->size());
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: keyed URL [N]\n");
    return 2;
  }
  const std::string url = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 50000;
  QueueOptions qo;
  qo.init_schema = true;
  qo.retention.succeeded = Duration::zero();
  auto q = Queue::open(url, qo);
  check(q.has_value(), "open");

  auto t = std::chrono::steady_clock::now();
  enqueue(*q, "k", 0, n / 10, 1, true, true);
  const double single = n / 10 / seconds_since(t);
  t = std::chrono::steady_clock::now();
  enqueue(*q, "k", n / 10, n / 10 + n, 500, true, true);
  const double batch = n / seconds_since(t);
  t = std::chrono::steady_clock::now();
  enqueue(*q, "k", 0, n / 10, 1, true, false);
  const double held = n / 10 / seconds_since(t);
  t = std::chrono::steady_clock::now();
  const int drained = drain(*q, "k");
  check(drained == n + n / 10, "drained every keyed job");
  const double keyed_drain = drained / seconds_since(t);
  t = std::chrono::steady_clock::now();
  enqueue(*q, "p", 0, n, 500, false, true);
  const double plain_batch = n / seconds_since(t);
  t = std::chrono::steady_clock::now();
  check(drain(*q, "p") == n, "drained every plain job");
  const double plain_drain = n / seconds_since(t);
  printf("single %.0f batch %.0f held %.0f drain %.0f plain_batch %.0f plain_drain %.0f\n", single,
         batch, held, keyed_drain, plain_batch, plain_drain);
  return 0;
}
