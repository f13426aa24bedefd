// bench/suites.hpp — the benchmarks of issue 5, each run for every subject (readpast and its
// raw-SQL ceiling) on one engine, emitting JSON lines through a Reporter.
//
// Every readpast line carries "ceiling" (the raw subject's value of the same metric in the
// same run) and "pct_of_ceiling", so that a ratio never mixes two runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "children.hpp"
#include "report.hpp"
#include "subject.hpp"

namespace readpast::bench {

struct Settings {
  Target target;
  std::vector<std::string> systems = {"raw", "readpast"};  // raw first: its value is the ceiling
  // readpast's retention.succeeded: "delete" (0: completed jobs are deleted, the same
  // lifecycle as the raw ceiling) or "keep" (the default 24h).
  std::vector<std::string> retentions = {"delete"};

  // enqueue
  std::int64_t n_single = 20000;
  std::int64_t n_batch = 200000;
  std::vector<std::int64_t> enqueue_batches = {100, 1000};

  // drain: processes x threads shapes and lease batch sizes; jobs per run
  std::vector<DrainShape> drain_shapes;  // batch ignored; crossed with drain_batches
  std::vector<std::int64_t> drain_batches = {1, 10, 100, 1000};
  std::int64_t drain_n_small = 20000;   // batch sizes below 100
  std::int64_t drain_n_large = 200000;  // batch sizes 100 and up

  // add → start latency
  int latency_rate = 200;
  double latency_seconds = 30;
  int latency_workers = 8;

  // lease cost vs queue depth
  std::vector<std::int64_t> depths = {10000, 1000000};
  std::vector<std::int64_t> depth_batches = {1, 100};
  int depth_cycles = 2000;

  // throughput while a transaction holds a snapshot
  // Windows run before the baseline and left out of it (phase "warmup"): the first minute of a
  // fresh database sometimes ran at 0.8 of the later ones (runs 57-59), and a baseline that low
  // flatters every held window measured against it.
  double snapshot_warmup_seconds = 30;
  double snapshot_baseline_seconds = 60;
  double snapshot_seconds = 600;
  double snapshot_window_seconds = 10;
  int snapshot_workers = 8;
  int snapshot_batch = 100;
  // 0: the producer keeps 20,000 jobs waiting (the workers' ceiling); N: it offers N jobs/s
  // whatever the workers do, and the windows show whether the backlog grows.
  int snapshot_rate = 0;
  // Producer threads, each on its own connection, sharing the backlog or the offered rate:
  // on a small machine one producer cannot keep a backlog ahead of eight fast workers, and
  // the windows then measure the producer (run 26).
  int snapshot_producers = 1;
  double snapshot_tail_seconds = 0;  // windows after the hold ends
  // SQLite: the hold ends early, with the summary saying so, once the directory of the
  // database file has less than this many GB free. A held reader keeps every commit in the
  // WAL: 60.8 GB in ten minutes of the suite (run 41), and a full disk fails every writer.
  double snapshot_min_free_gb = 10;
  // "read": the holder only reads; "write": it also writes a row (PostgreSQL);
  // "read-checkpointed" (SQLite): it only reads, and begins right after a FULL checkpoint, so
  // that it most likely reads the database file alone (WAL read lock 0), which no
  // checkpoint can copy past; "read" gets that or a later read lock by chance (run 28);
  // "none": nothing is held, so the "held" windows are a control of the same length (run 59).
  std::string snapshot_holder = "read";

  // The command that starts a worker process: this program's path and `child-work` with
  // the target's options (see main.cpp).
  std::vector<std::string> child_args;
};

void run_enqueue(const Settings& settings, Reporter& reporter);
void run_drain(const Settings& settings, Reporter& reporter);
void run_latency(const Settings& settings, Reporter& reporter);
void run_depth(const Settings& settings, Reporter& reporter);
void run_snapshot(const Settings& settings, Reporter& reporter);

// The subject named "raw" or "readpast" (with retention "delete" or "keep").
std::unique_ptr<Subject> make_subject(const Target& target, const std::string& system,
                                      const std::string& retention, int threads);

}  // namespace readpast::bench
