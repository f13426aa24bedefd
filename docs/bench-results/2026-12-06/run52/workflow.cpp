// Run 52 (docs/benchmarks.md): what waiting jobs in a table of their own (schema 17) cost the
// paths that touch them, before and after. One process, one connection at a time, on a fresh
// schema; each phase timed on its own and printed as jobs/s:
//   dependents  enqueue N parents in batches of 500, then N dependents one by one, each after
//               one parent (each locks its parent and is inserted waiting)
//   release     lease the parents 100 at a time and complete them (retention 0), then resolve
//               rounds until none is left: parents and dependents told, per second of both
//   drain       lease the released dependents 100 at a time and complete them
//   cancel      N/10 more dependents of one parent that stays available, cancelled 100 at a time
//   keyed       N keyed jobs in batches of 500, then their drain (a keyed completion gives its
//               key back through live's trigger, which schema 17 changed)
// Built against a build's libreadpast.a, from the repository's root (one command line):
//   g++ -std=c++20 -O2 -Iinclude docs/bench-results/2026-12-06/run52/workflow.cpp
//       build/src/libreadpast.a -lsqlite3 -lpq -lmariadb -lcctz -lpthread -o workflow
//   ./workflow URL [N]   (run 44's keyed.sh alternates two builds on one cluster)
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

NewJob make(const std::string& queue, int i) {
  NewJob j;
  j.queue = queue;
  j.payload = "{\"n\":" + std::to_string(i) + "}";
  return j;
}

std::vector<JobId> enqueue_batches(Queue& q, const std::string& queue, int n, bool keyed) {
  std::vector<JobId> ids;
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; i += 500) {
    jobs.clear();
    for (int k = i; k < std::min(n, i + 500); ++k) {
      jobs.push_back(make(queue, k));
      if (keyed) jobs.back().unique_key = "key-" + std::to_string(k);
    }
    auto r = q.enqueue_batch(jobs);
    check(r.has_value(), "enqueue_batch");
    for (const auto& e : *r) ids.push_back(e.id);
  }
  return ids;
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
    fprintf(stderr, "usage: workflow URL [N]\n");
    return 2;
  }
  const std::string url = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 10000;
  QueueOptions qo;
  qo.init_schema = true;
  qo.retention.succeeded = Duration::zero();
  auto q = Queue::open(url, qo);
  check(q.has_value(), "open");

  const auto parents = enqueue_batches(*q, "parents", n, false);
  auto t = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    NewJob d = make("dependents", i);
    d.after = {parents[static_cast<std::size_t>(i)]};
    auto r = q->enqueue(d);
    check(r.has_value() && r->inserted, "enqueue dependent");
  }
  const double dependents = n / seconds_since(t);

  t = std::chrono::steady_clock::now();
  check(drain(*q, "parents") == n, "drained every parent");
  for (;;) {
    auto told = q->resolve_dependencies();
    check(told.has_value(), "resolve");
    if (*told == 0) break;
  }
  const double release = 2.0 * n / seconds_since(t);
  t = std::chrono::steady_clock::now();
  check(drain(*q, "dependents") == n, "drained every dependent");
  const double dependents_drain = n / seconds_since(t);

  const JobId stays = enqueue_batches(*q, "stays", 1, false)[0];
  std::vector<JobId> waiting;
  for (int i = 0; i < n / 10; ++i) {
    NewJob d = make("cancelled", i);
    d.after = {stays};
    auto r = q->enqueue(d);
    check(r.has_value(), "enqueue to cancel");
    waiting.push_back(r->id);
  }
  t = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < waiting.size(); i += 100) {
    std::vector<JobId> some(
        waiting.begin() + static_cast<std::ptrdiff_t>(i),
        waiting.begin() + static_cast<std::ptrdiff_t>(std::min(waiting.size(), i + 100)));
    auto r = q->cancel(some);
    check(r.has_value() && r->size() == some.size(), "cancel");
  }
  const double cancel = static_cast<double>(waiting.size()) / seconds_since(t);

  enqueue_batches(*q, "keyed", n * 5, true);
  t = std::chrono::steady_clock::now();
  check(drain(*q, "keyed") == n * 5, "drained every keyed job");
  const double keyed_drain = n * 5 / seconds_since(t);
  printf("dependents %.0f release %.0f drain %.0f cancel %.0f keyed_drain %.0f\n", dependents,
         release, dependents_drain, cancel, keyed_drain);
  return 0;
}
