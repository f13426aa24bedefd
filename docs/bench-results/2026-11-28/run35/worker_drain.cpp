// Run 35 (docs/benchmarks.md): drains N jobs (default 20,000) through readpast::Worker, 8
// threads and 500 prefetched, completed jobs deleted, on any readpast URL; prints jobs/s.
// Built against a build's libreadpast.a, e.g. from the repository's root:
//   g++ -std=c++20 -O2 -Iinclude docs/bench-results/2026-11-28/run35/worker_drain.cpp
//       build/src/libreadpast.a -lsqlite3 -lpq -lmariadb -lcctz -lpthread -o worker_drain
//   (one command line)
//   ./worker_drain sqlite:///tmp/wd.sqlite 20000   (a fresh file each run)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "readpast/readpast.hpp"
using namespace readpast;
int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: worker_drain URL [JOBS]\n");
    return 2;
  }
  std::string url = argv[1];
  int n = argc > 2 ? std::atoi(argv[2]) : 20000;
  QueueOptions qo;
  qo.init_schema = true;
  qo.retention.succeeded = Duration::zero();
  auto q = Queue::open(url, qo);
  if (!q) {
    fprintf(stderr, "%s\n", q.error().message.c_str());
    return 1;
  }
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; ++i) {
    NewJob j;
    j.queue = "q";
    j.payload = "{\"seq\":" + std::to_string(i) + "}";
    jobs.push_back(j);
    if (jobs.size() == 1000 || i == n - 1) {
      if (auto enqueued = q->enqueue_batch(jobs); !enqueued) {
        fprintf(stderr, "%s\n", enqueued.error().message.c_str());
        return 1;
      }
      jobs.clear();
    }
  }
  WorkerOptions o;
  o.drain = true;
  o.run_schedules = false;
  o.retention_interval = std::nullopt;
  o.logger = [](const LogRecord&) {};
  auto t0 = std::chrono::steady_clock::now();
  Worker w(*q, o);
  if (auto handled = w.handle(
          "q", [](const Job&, std::stop_token) { return JobResult::success(); },
          QueueConfig{.concurrency = 8, .prefetch = 500});
      !handled) {
    fprintf(stderr, "%s\n", handled.error().message.c_str());
    return 1;
  }
  auto r = w.run();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("%lld jobs in %.3f s: %.0f jobs/s %s\n", (long long)w.counters().succeeded, s,
         w.counters().succeeded / s, r ? "" : r.error().message.c_str());
}
