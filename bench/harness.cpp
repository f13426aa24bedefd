#include "harness.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "common.hpp"
#include "pg_client.hpp"
#include "readpast/readpast.hpp"
#include "report.hpp"
#include "subject.hpp"

namespace readpast::bench {
namespace {

using nlohmann::json;

std::int64_t env_int(const char* name, std::int64_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::stoll(value) : fallback;
}

struct HarnessEnv {
  std::string url;
  std::int64_t n = 20000;
  int concurrency = 8;
  std::int64_t enqueue_batch = 1000;
  int latency_rate = 200;
  int latency_seconds = 10;
  int worker_prefetch = 500;  // drain_worker's QueueConfig::prefetch
  // The drains to run, by metric name (READPAST_HARNESS_DRAINS, comma-separated); empty:
  // all of them.
  std::vector<std::string> drains;
};

QueueOptions retention(bool keep) {
  QueueOptions options;
  if (!keep) options.retention.succeeded = Duration::zero();
  return options;
}

std::string retention_text(bool keep) {
  return keep ? "retention.succeeded 24h (the default: completed jobs kept)"
              : "retention.succeeded 0 (completed jobs deleted)";
}

void emit(Reporter& reporter, const std::string& metric, double value, const std::string& unit,
          std::int64_t n, int concurrency, json extra) {
  json line = {{"system", "readpast"},
               {"metric", metric},
               {"value", std::abs(value) >= 100 ? std::round(value * 10) / 10
                                                : std::round(value * 1000) / 1000},
               {"unit", unit},
               {"n", n},
               {"concurrency", concurrency}};
  line.update(extra);
  reporter.emit(std::move(line));
}

void harness_enqueue(const HarnessEnv& env, const Target& target, Reporter& reporter) {
  auto subject = make_readpast_subject(target, retention(true));
  PgConn admin(env.url);
  std::vector<std::string> jobs;
  for (std::int64_t i = 0; i < env.n; ++i) jobs.push_back(payload(i));
  auto single = [&](const std::string& metric, const std::string& note) {
    const auto start = Clock::now();
    for (const auto& p : jobs) subject->enqueue(p);
    const double seconds = seconds_since(start);
    emit(reporter, metric, env.n / seconds, "jobs/s", env.n, 1,
         {{"elapsed_s", seconds},
          {"options", "Queue::enqueue(NewJob) awaited one at a time (one connection); " + note}});
  };
  // (a1) the table is empty and was just analysed as empty.
  subject->reset();
  subject->settle();
  single("enqueue_single", "table stats: empty (VACUUM ANALYZE on the empty table first)");
  // (a2) batches
  subject->reset();
  subject->settle();
  const auto start = Clock::now();
  for (std::int64_t i = 0; i < env.n; i += env.enqueue_batch) {
    const auto count = std::min(env.enqueue_batch, env.n - i);
    subject->enqueue_batch(std::span<const std::string>(jobs).subspan(
        static_cast<std::size_t>(i), static_cast<std::size_t>(count)));
  }
  const double seconds = seconds_since(start);
  if (subject->unfinished() != env.n) fail("harness: batch enqueue lost jobs");
  emit(reporter, "enqueue_batch" + std::to_string(env.enqueue_batch), env.n / seconds, "jobs/s",
       env.n, 1,
       {{"elapsed_s", seconds},
        {"options", "Queue::enqueue_batch(" + std::to_string(env.enqueue_batch) +
                        " jobs) awaited one batch at a time; table stats: empty"}});
  // (a3) statistics that describe a table of N jobs: ANALYZE with them present, then delete.
  admin.exec("ANALYZE readpast.live");
  admin.exec("DELETE FROM readpast.live");
  admin.exec("CHECKPOINT");
  single("enqueue_single_warmstats", "table stats: " + std::to_string(env.n) +
                                         " rows (ANALYZE with them present, then deleted)");
  subject->reset();
}

// Drains through readpast::Worker, the library's worker: one fetcher leasing for
// `concurrency` handler threads plus `prefetch` jobs held ahead (graphile-worker's
// localQueue), a completer recording completions in batches; `on_job` runs for each job.
// Returns the jobs completed.
std::int64_t drain_with_worker(Queue& queue, int concurrency, int prefetch,
                               const std::function<void()>& on_job) {
  WorkerOptions options;
  options.drain = true;
  options.run_schedules = false;
  options.retention_interval = std::nullopt;
  Worker worker(queue, options);
  auto registered = worker.handle(
      std::string(kQueue),
      [&](const Job&, std::stop_token) {
        on_job();
        return JobResult::success();
      },
      QueueConfig{.concurrency = concurrency, .prefetch = prefetch});
  if (!registered) fail("harness: " + registered.error().message);
  if (auto ran = worker.run(); !ran) fail("harness: worker: " + ran.error().message);
  return worker.counters().succeeded;
}

void harness_drain(const HarnessEnv& env, const Target& target, Reporter& reporter) {
  struct Variant {
    std::string metric;
    int batch;
    bool keep;
    // Through readpast::Worker with this prefetch, instead of threads that each lease
    // `batch` jobs and complete them.
    std::optional<int> worker_prefetch;
  };
  // drain_worker: graphile-worker's performance preset holds a local queue of 500 jobs
  // for its 8 workers; readpast's Worker holds the same 500 ahead of its 8 threads.
  const std::vector<Variant> variants = {{"drain_batch1", 1, true, std::nullopt},
                                         {"drain_batch100", 100, true, std::nullopt},
                                         {"drain_batch100_delete", 100, false, std::nullopt},
                                         {"drain_batch1000_delete", 1000, false, std::nullopt},
                                         {"drain_worker", 0, false, env.worker_prefetch}};
  for (const auto& name : env.drains) {
    if (std::none_of(variants.begin(), variants.end(),
                     [&](const Variant& v) { return v.metric == name; })) {
      std::string known;
      for (const auto& v : variants) known += (known.empty() ? "" : ", ") + v.metric;
      fail("harness: READPAST_HARNESS_DRAINS names no drain '" + name + "' (drains: " + known +
           ")");
    }
  }
  for (const auto& v : variants) {
    if (!env.drains.empty() &&
        std::find(env.drains.begin(), env.drains.end(), v.metric) == env.drains.end()) {
      continue;
    }
    auto admin = make_readpast_subject(target, retention(v.keep));
    admin->reset();
    std::vector<std::string> jobs;
    for (std::int64_t i = 0; i < env.n; ++i) jobs.push_back(payload(i));
    for (std::int64_t i = 0; i < env.n; i += 1000) {
      admin->enqueue_batch(std::span<const std::string>(jobs).subspan(
          static_cast<std::size_t>(i),
          static_cast<std::size_t>(std::min<std::int64_t>(1000, env.n - i))));
    }
    admin->settle();
    std::atomic<std::int64_t> handled{0};
    std::atomic<std::int64_t> first_us{-1};
    std::string how;
    // The timer includes opening the queue and starting the workers, as for the peers.
    const auto start = Clock::now();
    auto on_job = [&] {
      if (handled.fetch_add(1) == 0) {
        first_us =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
      }
    };
    double seconds = 0;
    std::int64_t tail_ms = 0;  // from the last job handled to the timer's stop
    const auto tail_since = [](Clock::time_point handled_at) {
      return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - handled_at)
          .count();
    };
    json worker_extra = json::object();
    if (v.worker_prefetch) {
      auto queue = Queue::open(env.url, retention(v.keep));
      if (!queue) fail("harness: " + queue.error().message);
      // The timer stops as the peers' harness stops it (graphile.js, benchDrain): once every
      // job was handled and the table holds none unfinished, seen from another connection
      // while the worker still runs. The worker's own shutdown (noticing the queue is
      // drained, joining its threads) is reported apart, as worker_returned_ms.
      std::atomic<bool> returned{false};
      std::int64_t completed = 0;
      std::optional<std::string> failed;
      std::jthread runner([&] {
        try {
          completed = drain_with_worker(*queue, env.concurrency, *v.worker_prefetch, on_job);
        } catch (const std::exception& e) {
          failed = e.what();
        }
        returned = true;
      });
      while (handled.load() < env.n && !returned.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
      const auto handled_at = Clock::now();
      while (!returned.load() && admin->unfinished() != 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      seconds = seconds_since(start);
      tail_ms = tail_since(handled_at);
      runner.join();
      if (failed) fail(*failed);
      if (completed != env.n) fail("harness: the worker completed fewer jobs than it handled");
      if (admin->unfinished() != 0) fail("harness: the worker returned with jobs unfinished");
      worker_extra["worker_returned_ms"] =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      how = "readpast::Worker(drain) with one QueueConfig{concurrency=" +
            std::to_string(env.concurrency) + ", prefetch=" + std::to_string(*v.worker_prefetch) +
            "}: a fetcher leasing for the handler threads (and a second one overlapping its "
            "leases), completions recorded in batches; timer stops once all jobs were handled "
            "and none is unfinished (polled every 5 ms, as the peers' harness does)";
    } else {
      auto workers = make_readpast_subject(target, retention(v.keep));
      WorkerSetup setup;
      setup.threads = env.concurrency;
      setup.batch = v.batch;
      setup.until_empty = true;
      workers->work(
          setup, [&](std::int64_t, std::string_view) { on_job(); }, std::stop_token{});
      how = std::to_string(env.concurrency) +
            " worker threads over one Queue, each: lease(max_jobs=" + std::to_string(v.batch) +
            ") → handler → complete_batch";
      const auto handled_at = Clock::now();
      while (admin->unfinished() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      seconds = seconds_since(start);
      tail_ms = tail_since(handled_at);
    }
    if (handled.load() != env.n) fail("harness: drain handled " + std::to_string(handled.load()));
    json extra = {
        {"elapsed_s", seconds},
        {"handled", handled.load()},
        {"first_job_ms", first_us.load() / 1000},
        {"tail_ms", tail_ms},
        {"options", how + "; " + retention_text(v.keep) + "; timer includes Queue::open"}};
    extra.update(worker_extra);
    emit(reporter, v.metric, env.n / seconds, "jobs/s", env.n, env.concurrency, std::move(extra));
  }
}

void harness_latency(const HarnessEnv& env, const Target& target, Reporter& reporter) {
  auto workers = make_readpast_subject(target, retention(true));
  auto producer = make_readpast_subject(target, retention(true));
  workers->reset();
  const std::int64_t expected = static_cast<std::int64_t>(env.latency_rate) * env.latency_seconds;
  std::mutex mu;
  std::vector<double> latencies;
  std::stop_source stop;
  std::jthread worker_thread([&] {
    WorkerSetup setup;
    setup.threads = env.concurrency;
    setup.batch = 1;
    setup.until_empty = false;
    workers->work(
        setup,
        [&](std::int64_t, std::string_view p) {
          const auto now = wall_micros();
          if (auto sent = enqueue_time_of(p)) {
            std::lock_guard lock(mu);
            latencies.push_back(static_cast<double>(now - *sent) / 1000.0);
          }
        },
        stop.get_token());
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto start = Clock::now();
  const auto interval = std::chrono::duration<double>(1.0 / env.latency_rate);
  for (std::int64_t i = 0; i < expected; ++i) {
    std::this_thread::sleep_until(
        start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(i)));
    producer->enqueue(payload_with_time(i, wall_micros()));
  }
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < deadline) {
    {
      std::lock_guard lock(mu);
      if (static_cast<std::int64_t>(latencies.size()) >= expected) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop.request_stop();
  worker_thread.join();
  const auto p = percentiles(latencies);
  const json extra = {
      {"received", p.count},
      {"expected", expected},
      {"options", "rate " + std::to_string(env.latency_rate) + "/s for " +
                      std::to_string(env.latency_seconds) +
                      "s via Queue::enqueue on its own Queue; " + std::to_string(env.concurrency) +
                      " worker threads, lease(max_jobs=1), idle ones in wait_for_work "
                      "(LISTEN/NOTIFY)"}};
  const auto n = static_cast<std::int64_t>(p.count);
  emit(reporter, "latency_notify_p50", p.p50, "ms", n, env.concurrency, extra);
  emit(reporter, "latency_notify_p99", p.p99, "ms", n, env.concurrency, extra);
  emit(reporter, "latency_notify_p999", p.p999, "ms", n, env.concurrency, extra);
  emit(reporter, "latency_notify_max", p.max, "ms", n, env.concurrency, extra);
  workers->reset();
}

}  // namespace

int harness_main(const std::vector<std::string>& parts_in) {
  HarnessEnv env;
  const char* url = std::getenv("BENCH_PG_URL");
  if (url == nullptr || *url == '\0') {
    std::cerr << "readpast_bench harness: BENCH_PG_URL is not set\n";
    return 2;
  }
  env.url = url;
  env.n = env_int("BENCH_N", 20000);
  env.concurrency = static_cast<int>(env_int("BENCH_CONCURRENCY", 8));
  env.enqueue_batch = env_int("BENCH_ENQ_BATCH", 1000);
  env.latency_rate = static_cast<int>(env_int("BENCH_LAT_RATE", 200));
  env.latency_seconds = static_cast<int>(env_int("BENCH_LAT_SECONDS", 10));
  env.worker_prefetch = static_cast<int>(env_int("READPAST_HARNESS_PREFETCH", 500));
  if (const char* drains = std::getenv("READPAST_HARNESS_DRAINS"); drains != nullptr) {
    std::stringstream list(drains);
    for (std::string name; std::getline(list, name, ',');) {
      if (!name.empty()) env.drains.push_back(name);
    }
  }
  std::vector<std::string> parts = parts_in;
  if (parts.empty()) parts = {"enqueue", "drain", "latency"};
  Target target;
  target.engine = EngineKind::kPostgres;
  target.pg_url = env.url;
  Reporter reporter(stdout, json::object());
  try {
    for (const auto& part : parts) {
      if (part == "enqueue") {
        harness_enqueue(env, target, reporter);
      } else if (part == "drain") {
        harness_drain(env, target, reporter);
      } else if (part == "latency") {
        harness_latency(env, target, reporter);
      } else {
        std::cerr << "readpast_bench harness: unknown part '" << part << "'\n";
        return 2;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "readpast_bench harness: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace readpast::bench
