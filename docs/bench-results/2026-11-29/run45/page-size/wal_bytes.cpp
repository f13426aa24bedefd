// Run 45 (docs/benchmarks.md): bytes written to SQLite's WAL per job, by phase, with a reader
// holding a snapshot so that the WAL never restarts and every byte written stays in it.
// 100,000 jobs enqueued 100 a batch, then leased 100 at a time, then completed a lease's batch
// at a time (retention 0: deleted). PAGE_SIZE=N creates the file with N-byte pages first;
// an SQL text after N runs before the reader begins (e.g. "DROP INDEX readpast_jobs_lease");
// PAD=B pads each payload with B bytes (default 24).
// Built against a build's libreadpast.a, from the repository's root (one command line):
//   g++ -std=c++20 -O2 -Iinclude docs/bench-results/2026-11-29/run45/page-size/wal_bytes.cpp
//       build/src/libreadpast.a -lsqlite3 -lpq -lmariadb -lcctz -lpthread -o wal_bytes
//   rm -f /tmp/w.db*; PAGE_SIZE=2048 ./wal_bytes /tmp/w.db [N] [SQL]
#include <sqlite3.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "readpast/readpast.hpp"
using namespace readpast;

namespace {
long long wal_bytes(const std::string& path) {
  struct stat st {};
  if (stat((path + "-wal").c_str(), &st) != 0) return 0;
  return st.st_size;
}

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "failed: %s\n", what);
    std::exit(1);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: wal_bytes FILE [N] [SQL]\n");
    return 2;
  }
  const std::string path = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 100000;
  const char* before = argc > 3 ? argv[3] : "";
  const char* pad_env = std::getenv("PAD");
  const std::string pad(pad_env ? static_cast<std::size_t>(std::atol(pad_env)) : 24, 'x');
  if (const char* page_size = std::getenv("PAGE_SIZE")) {
    sqlite3* c = nullptr;
    sqlite3_open(path.c_str(), &c);
    const std::string sql =
        std::string("PRAGMA page_size=") + page_size + "; CREATE TABLE x(a); DROP TABLE x;";
    sqlite3_exec(c, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_close(c);
  }
  QueueOptions options;
  options.init_schema = true;
  options.retention.succeeded = Duration::zero();
  auto q = Queue::open("sqlite:" + path, options);
  check(q.has_value(), "open");
  sqlite3* reader = nullptr;
  sqlite3_open(path.c_str(), &reader);
  if (*before) sqlite3_exec(reader, before, nullptr, nullptr, nullptr);
  sqlite3_exec(reader, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr);
  sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM readpast_jobs;", nullptr, nullptr, nullptr);
  const long long b0 = wal_bytes(path);
  for (int i = 0; i < n; i += 100) {
    std::vector<NewJob> jobs;
    for (int k = i; k < i + 100; ++k) {
      NewJob j;
      j.queue = "q";
      j.payload = "{\"n\":" + std::to_string(k) + ",\"pad\":\"" + pad + "\"}";
      jobs.push_back(j);
    }
    check(q->enqueue_batch(jobs).has_value(), "enqueue");
  }
  const long long b1 = wal_bytes(path);
  std::vector<std::vector<LeasedRef>> leases;
  for (;;) {
    auto leased = q->lease({.queue = "q", .worker_id = "w", .max_jobs = 100});
    check(leased.has_value(), "lease");
    if (leased->empty()) break;
    std::vector<LeasedRef> refs;
    for (const Job& j : *leased) refs.push_back({j.id, *j.lease_token});
    leases.push_back(std::move(refs));
  }
  const long long b2 = wal_bytes(path);
  for (const auto& refs : leases) check(q->complete_batch(refs).has_value(), "complete");
  const long long b3 = wal_bytes(path);
  printf("bytes/job: enqueue %.0f lease %.0f complete %.0f total %.0f\n", double(b1 - b0) / n,
         double(b2 - b1) / n, double(b3 - b2) / n, double(b3 - b0) / n);
  sqlite3_exec(reader, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(reader);
}
