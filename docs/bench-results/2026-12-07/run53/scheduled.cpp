// Run 53 (docs/benchmarks.md): what jobs scheduled for later in a table of their own (schema 18)
// cost the paths that touch them, before and after. One process, one connection at a time, on
// a fresh schema; each phase timed on its own and printed as jobs/s:
//   due_enqueue   N due jobs in batches of 500 (the trigger's condition, nothing else)
//   due_drain     their drain, leases of 100 completed in batches (the lease's probe of
//                 scheduled, nothing due there)
//   later_enqueue N jobs with a 1-s delay in batches of 500 (schema 18: into live, then moved)
//   promoted      their drain once due, leases of 100 (schema 18: each lease promotes first)
//   retry_later   N due jobs leased 100 at a time and failed with a 1-hour retry (schema 18: the
//                 failure's update, then the move)
//   cancel        N/10 of those, cancelled 100 at a time (schema 18: found in scheduled)
// Built against a build's libreadpast.a, from the repository's root (one command line):
//   g++ -std=c++20 -O2 -Iinclude docs/bench-results/2026-12-07/run53/scheduled.cpp
//       build/src/libreadpast.a -lsqlite3 -lpq -lmariadb -lcctz -lpthread -o scheduled
//   ./scheduled URL [N]   (run 44's keyed.sh alternates two builds on one cluster)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
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

std::vector<JobId> enqueue_batches(Queue& q, const std::string& queue, int n,
                                   std::optional<Duration> delay) {
  std::vector<JobId> ids;
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; i += 500) {
    jobs.clear();
    for (int k = i; k < std::min(n, i + 500); ++k) {
      NewJob j;
      j.queue = queue;
      j.payload = "{\"n\":" + std::to_string(k) + "}";
      j.delay = delay;
      jobs.push_back(std::move(j));
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
    fprintf(stderr, "usage: scheduled URL [N]\n");
    return 2;
  }
  const std::string url = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 20000;
  QueueOptions qo;
  qo.init_schema = true;
  qo.retention.succeeded = Duration::zero();
  auto q = Queue::open(url, qo);
  check(q.has_value(), "open");

  auto t = std::chrono::steady_clock::now();
  enqueue_batches(*q, "due", n, std::nullopt);
  const double due_enqueue = n / seconds_since(t);
  t = std::chrono::steady_clock::now();
  check(drain(*q, "due") == n, "drained every due job");
  const double due_drain = n / seconds_since(t);

  t = std::chrono::steady_clock::now();
  enqueue_batches(*q, "later", n, std::chrono::seconds(1));
  const double later_enqueue = n / seconds_since(t);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  t = std::chrono::steady_clock::now();
  check(drain(*q, "later") == n, "drained every delayed job");
  const double promoted = n / seconds_since(t);

  enqueue_batches(*q, "retried", n, std::nullopt);
  std::vector<JobId> retried;
  t = std::chrono::steady_clock::now();
  for (;;) {
    auto leased = q->lease({.queue = "retried", .worker_id = "w", .max_jobs = 100});
    check(leased.has_value(), "lease to fail");
    if (leased->empty()) break;
    std::vector<FailRequest> failures;
    for (const Job& j : *leased) {
      FailRequest f{j.id, *j.lease_token, "boom", {}};
      f.options.retry_after = std::chrono::hours(1);
      failures.push_back(std::move(f));
      retried.push_back(j.id);
    }
    check(q->fail_batch(failures).has_value(), "fail");
  }
  const double retry_later = static_cast<double>(retried.size()) / seconds_since(t);
  check(static_cast<int>(retried.size()) == n, "failed every job");

  t = std::chrono::steady_clock::now();
  const std::size_t to_cancel = retried.size() / 10;
  for (std::size_t i = 0; i < to_cancel; i += 100) {
    std::vector<JobId> some(
        retried.begin() + static_cast<std::ptrdiff_t>(i),
        retried.begin() + static_cast<std::ptrdiff_t>(std::min(to_cancel, i + 100)));
    auto r = q->cancel(some);
    check(r.has_value() && r->size() == some.size(), "cancel");
  }
  const double cancel = static_cast<double>(to_cancel) / seconds_since(t);
  printf(
      "due_enqueue %.0f due_drain %.0f later_enqueue %.0f promoted %.0f retry_later %.0f "
      "cancel %.0f\n",
      due_enqueue, due_drain, later_enqueue, promoted, retry_later, cancel);
  return 0;
}
