#include "suites.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "common.hpp"
#include "pg_client.hpp"
#include "sqlite_client.hpp"

#if READPAST_BENCH_MARIADB
#include "mariadb_parts.hpp"
#endif

namespace readpast::bench {
namespace {

using nlohmann::json;

std::string system_name(const std::string& system, const std::string& retention) {
  if (system == "raw") return "raw";
  return retention == "keep" ? "readpast-keep" : "readpast";
}

// The raw values of this run, by metric: what readpast's lines are compared with.
class Ceilings {
 public:
  // Remembers a raw value (the best one, when a metric is measured in several forms).
  void offer(const std::string& metric, double value, bool higher_is_better = true) {
    auto [it, inserted] = values_.emplace(metric, value);
    if (!inserted) {
      it->second = higher_is_better ? std::max(it->second, value) : std::min(it->second, value);
    }
  }
  // Adds "ceiling" and "pct_of_ceiling" to a readpast line when a raw value exists.
  void annotate(json& line, bool higher_is_better = true) const {
    auto it = values_.find(line["metric"].get<std::string>());
    if (it == values_.end() || it->second == 0) return;
    const double value = line["value"].get<double>();
    line["ceiling"] = it->second;
    line["pct_of_ceiling"] =
        std::round(1000.0 * (higher_is_better ? value / it->second : it->second / value)) / 10.0;
  }

 private:
  std::map<std::string, double> values_;
};

json base_line(const Subject& subject, const std::string& metric, double value,
               const std::string& unit, std::int64_t n, int concurrency) {
  return json{{"system", subject.system() == "readpast" ? "readpast" : subject.system()},
              {"metric", metric},
              {"value", std::round(value * 100.0) / 100.0},
              {"unit", unit},
              {"n", n},
              {"concurrency", concurrency}};
}

bool is_raw(const Subject& subject) {
  return subject.system() != "readpast";
}

void emit(Reporter& reporter, Ceilings& ceilings, const Subject& subject, json line,
          const std::string& system_label, bool higher_is_better = true) {
  line["system"] = system_label;
  if (subject.system() == "raw-ring") {
    // A prototype of other storage, not the ceiling of readpast's: reported beside both.
  } else if (is_raw(subject)) {
    ceilings.offer(line["metric"], line["value"].get<double>(), higher_is_better);
  } else {
    ceilings.annotate(line, higher_is_better);
  }
  std::string summary = system_label + " " + line["metric"].get<std::string>() + " = " +
                        line["value"].dump() + " " + line["unit"].get<std::string>();
  if (line.contains("pct_of_ceiling")) {
    summary += "  (" + line["pct_of_ceiling"].dump() + "% of raw)";
  }
  reporter.say(summary);
  reporter.emit(std::move(line));
}

std::string label_of(const Subject& subject, const std::string& retention) {
  return is_raw(subject) ? subject.system() : system_name("readpast", retention);
}

std::vector<std::string> payloads(std::int64_t from, std::int64_t count) {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) out.push_back(payload(from + i));
  return out;
}

// Each (system, retention) pair to measure; raw once, first.
std::vector<std::pair<std::string, std::string>> subjects_of(const Settings& settings) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& system : settings.systems) {
    if (system == "raw" || system == "ring") {
      out.emplace_back(system, "");
    } else {
      for (const auto& retention : settings.retentions) out.emplace_back(system, retention);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.first == "raw" && b.first != "raw";
  });
  return out;
}

}  // namespace

std::unique_ptr<Subject> make_subject(const Target& target, const std::string& system,
                                      const std::string& retention, int threads) {
  if (system == "raw") return make_raw_subject(target, threads);
  if (system == "ring") return make_raw_ring_subject(target, threads);
  if (system != "readpast") fail("unknown system '" + system + "' (raw, ring, readpast)");
  QueueOptions options;
  if (retention == "delete") {
    options.retention.succeeded = Duration::zero();
  } else if (retention != "keep") {
    fail("unknown retention '" + retention + "' (delete, keep)");
  }
  return make_readpast_subject(target, options);
}

// ---- enqueue ---------------------------------------------------------------------------

void run_enqueue(const Settings& settings, Reporter& reporter) {
  Ceilings ceilings;
  for (const auto& [system, retention] : subjects_of(settings)) {
    auto subject = make_subject(settings.target, system, retention, 1);
    const std::string label = label_of(*subject, retention);
    // One by one, one connection, each awaited.
    {
      subject->reset();
      subject->settle();
      const auto jobs = payloads(0, settings.n_single);
      Progress progress(label + " enqueue_single", settings.n_single);
      const auto start = Clock::now();
      for (const auto& p : jobs) {
        subject->enqueue(p);
        progress.add(1);
      }
      const double seconds = seconds_since(start);
      json line = base_line(*subject, "enqueue_single", settings.n_single / seconds, "jobs/s",
                            settings.n_single, 1);
      line["elapsed_s"] = seconds;
      line["options"] = subject->describe();
      emit(reporter, ceilings, *subject, std::move(line), label);
    }
    // Batches, one connection; every form the subject offers.
    for (std::int64_t batch : settings.enqueue_batches) {
      for (const auto& form : subject->batch_forms()) {
        subject->use_batch_form(form);
        subject->reset();
        subject->settle();
        const std::int64_t n = settings.n_batch;
        const auto jobs = payloads(0, n);
        Progress progress(label + " enqueue_batch" + std::to_string(batch) + " " + form, n);
        const auto start = Clock::now();
        for (std::int64_t i = 0; i < n; i += batch) {
          const auto count = std::min(batch, n - i);
          subject->enqueue_batch(std::span<const std::string>(jobs).subspan(
              static_cast<std::size_t>(i), static_cast<std::size_t>(count)));
          progress.add(count);
        }
        const double seconds = seconds_since(start);
        json line = base_line(*subject, "enqueue_batch" + std::to_string(batch), n / seconds,
                              "jobs/s", n, 1);
        line["elapsed_s"] = seconds;
        line["form"] = form;
        line["options"] = subject->describe();
        emit(reporter, ceilings, *subject, std::move(line), label);
      }
    }
    subject->reset();
  }
}

// ---- drain -----------------------------------------------------------------------------

void run_drain(const Settings& settings, Reporter& reporter) {
  Ceilings ceilings;
  const auto subjects = subjects_of(settings);
  for (const auto& shape_in : settings.drain_shapes) {
    for (std::int64_t batch : settings.drain_batches) {
      DrainShape shape = shape_in;
      shape.batch = static_cast<int>(batch);
      const int workers = shape.processes * shape.threads;
      const std::int64_t n = batch >= 100 ? settings.drain_n_large : settings.drain_n_small;
      const std::string metric =
          "drain_w" + std::to_string(workers) + "_b" + std::to_string(batch) +
          (shape.processes > 1 ? "_p" + std::to_string(shape.processes) : "");
      for (const auto& [system, retention] : subjects) {
        auto subject = make_subject(settings.target, system, retention, shape.threads);
        const std::string label = label_of(*subject, retention);
        subject->reset();
        subject->prefill(n);
        subject->settle();
        std::vector<std::string> args = settings.child_args;
        args.insert(args.end(),
                    {"--system", system, "--retention", retention.empty() ? "delete" : retention});
        DrainResult result;
        {
          Progress progress(label + " " + metric, n);
          result = drain_with_children(args, shape, *subject, progress.counter());
        }
        if (result.completed != n) {
          fail(metric + ": " + std::to_string(result.completed) + " jobs completed, expected " +
               std::to_string(n));
        }
        json line = base_line(*subject, metric, n / result.seconds, "jobs/s", n, workers);
        line["elapsed_s"] = result.seconds;
        line["processes"] = shape.processes;
        line["threads"] = shape.threads;
        line["batch"] = batch;
        std::int64_t peak = 0, leases = 0, empty = 0, lost = 0;
        double cpu = 0;
        for (const auto& child : result.children) {
          cpu += child.value("cpu_s", 0.0);
          peak = std::max<std::int64_t>(peak, child.value("peak_rss_kib", std::int64_t{0}));
          leases += child.value("leases", std::int64_t{0});
          empty += child.value("empty_leases", std::int64_t{0});
          lost += child.value("lost", std::int64_t{0});
        }
        if (lost != 0) fail(metric + ": " + std::to_string(lost) + " completions lost their lease");
        line["worker_peak_rss_mib"] = std::round(peak / 102.4) / 10.0;
        // CPU the worker processes spent (user + system), per job: the client's share of
        // the 2 cores that it and the database server share.
        line["worker_cpu_us_per_job"] = std::round(cpu * 1e7 / static_cast<double>(n)) / 10.0;
        line["leases"] = leases;
        line["empty_leases"] = empty;
        line["options"] = subject->describe();
        emit(reporter, ceilings, *subject, std::move(line), label);
      }
    }
  }
}

// ---- add → start latency ---------------------------------------------------------------

void run_latency(const Settings& settings, Reporter& reporter) {
  Ceilings ceilings;
  for (const auto& [system, retention] : subjects_of(settings)) {
    auto workers = make_subject(settings.target, system, retention, settings.latency_workers);
    auto producer = make_subject(settings.target, system, retention, 1);
    const std::string label = label_of(*workers, retention);
    workers->reset();
    workers->settle();

    const auto expected =
        static_cast<std::int64_t>(settings.latency_rate * settings.latency_seconds);
    std::mutex mu;
    std::vector<double> latencies_ms;  // guarded by mu
    latencies_ms.reserve(static_cast<std::size_t>(expected));
    std::atomic<std::int64_t> received{0};
    const Handler handler = [&](std::int64_t, std::string_view payload) {
      const std::int64_t now = wall_micros();
      if (auto sent = enqueue_time_of(payload)) {
        std::lock_guard lock(mu);
        latencies_ms.push_back(static_cast<double>(now - *sent) / 1000.0);
      }
      received.fetch_add(1);
    };
    std::stop_source stop;
    std::jthread worker_thread([&] {
      WorkerSetup setup;
      setup.threads = settings.latency_workers;
      setup.batch = 1;
      setup.until_empty = false;
      setup.idle_wait = std::chrono::milliseconds(1000);
      workers->work(setup, handler, stop.get_token());
    });
    std::this_thread::sleep_for(std::chrono::seconds(1));  // workers idle and listening

    {
      Progress progress(
          label + " latency (open loop, " + std::to_string(settings.latency_rate) + "/s)",
          expected);
      const auto start = Clock::now();
      const auto interval = std::chrono::duration<double>(1.0 / settings.latency_rate);
      for (std::int64_t i = 0; i < expected; ++i) {
        std::this_thread::sleep_until(
            start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(i)));
        producer->enqueue_and_wake(payload_with_time(i, wall_micros()));
        progress.set(received.load());
      }
      const auto deadline = Clock::now() + std::chrono::seconds(20);
      while (received.load() < expected && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        progress.set(received.load());
      }
    }
    stop.request_stop();
    worker_thread.join();

    Percentiles p;
    {
      std::lock_guard lock(mu);
      p = percentiles(latencies_ms);
    }
    std::string woken_by = "polling PRAGMA data_version";
    if (settings.target.engine == EngineKind::kPostgres) {
      woken_by = "LISTEN/NOTIFY";
    } else if (settings.target.engine == EngineKind::kMariadb) {
      // No NOTIFY in MariaDB: both subjects poll.
      woken_by = is_raw(*workers)
                     ? "polling: one poller thread reads whether a job is due every 1 ms while a "
                       "worker is idle, and wakes one"
                     : "polling: each idle thread's wait_for_work reads whether a job is due, "
                       "1 ms after it starts and then twice as long each time, up to 25 ms";
    }
    const std::string options = std::to_string(settings.latency_workers) +
                                " idle worker threads (lease max_jobs=1, woken by " + woken_by +
                                "); producer in its own connection at " +
                                std::to_string(settings.latency_rate) + " jobs/s, open loop";
    // latency_p50 with the default 8 workers, latency_w1_p50 with one, and so on.
    const std::string prefix = settings.latency_workers == 8
                                   ? "latency_"
                                   : "latency_w" + std::to_string(settings.latency_workers) + "_";
    for (const auto& [suffix, value] : std::vector<std::pair<std::string, double>>{
             {"p50", p.p50}, {"p99", p.p99}, {"p999", p.p999}, {"max", p.max}}) {
      json line = base_line(*workers, prefix + suffix, value, "ms",
                            static_cast<std::int64_t>(p.count), settings.latency_workers);
      line["received"] = p.count;
      line["expected"] = expected;
      line["options"] = options;
      emit(reporter, ceilings, *workers, std::move(line), label, /*higher_is_better=*/false);
    }
    workers->reset();
  }
}

// ---- lease cost vs queue depth ---------------------------------------------------------

void run_depth(const Settings& settings, Reporter& reporter) {
  Ceilings ceilings;
  for (const auto& [system, retention] : subjects_of(settings)) {
    auto subject = make_subject(settings.target, system, retention, 1);
    const std::string label = label_of(*subject, retention);
    std::map<std::int64_t, double> first_depth_us;  // batch → p50 at the smallest depth
    for (std::int64_t depth : settings.depths) {
      std::int64_t spare = 0;
      for (auto b : settings.depth_batches) spare += b * (settings.depth_cycles + 50);
      subject->reset();
      {
        Progress progress(label + " prefill " + std::to_string(depth + spare), depth + spare);
        subject->prefill(depth + spare);
        progress.set(depth + spare);
      }
      subject->settle();
      for (std::int64_t batch : settings.depth_batches) {
        for (int i = 0; i < 50; ++i) subject->lease_cycle(static_cast<int>(batch));  // warm-up
        std::vector<double> lease_us, complete_us;
        {
          Progress progress(
              label + " lease depth " + std::to_string(depth) + " b" + std::to_string(batch),
              settings.depth_cycles);
          for (int i = 0; i < settings.depth_cycles; ++i) {
            const auto cycle = subject->lease_cycle(static_cast<int>(batch));
            if (cycle.leased != batch) fail("depth: a lease found fewer jobs than asked for");
            lease_us.push_back(cycle.lease_us);
            complete_us.push_back(cycle.complete_us);
            progress.add(1);
          }
        }
        const auto p = percentiles(lease_us);
        const auto c = percentiles(complete_us);
        const std::string metric =
            "lease_us_depth" + std::to_string(depth) + "_b" + std::to_string(batch);
        json line = base_line(*subject, metric, p.p50, "us", settings.depth_cycles, 1);
        line["depth"] = depth;
        line["batch"] = batch;
        line["lease_mean_us"] = p.mean;
        line["lease_p99_us"] = p.p99;
        line["complete_p50_us"] = c.p50;
        if (!first_depth_us.contains(batch)) first_depth_us[batch] = p.p50;
        line["vs_smallest_depth"] = std::round(100.0 * p.p50 / first_depth_us[batch]) / 100.0;
        line["options"] = "one connection; lease(max_jobs=" + std::to_string(batch) +
                          ") timed alone, then complete; " + subject->describe();
        emit(reporter, ceilings, *subject, std::move(line), label, /*higher_is_better=*/false);
      }
    }
    subject->reset();
  }
}

// ---- throughput while a snapshot is held -----------------------------------------------

namespace {

// Holds a snapshot open: PostgreSQL, a REPEATABLE READ transaction that has read a row (its
// xmin holds back vacuum and the pruning of dead row versions everywhere in the database);
// MariaDB, a REPEATABLE READ transaction WITH CONSISTENT SNAPSHOT that has read a row (its
// read view stops InnoDB's purge of old row versions and delete-marked rows, in every table);
// SQLite, a read transaction (its WAL read lock keeps checkpoints from completing; with
// `read-checkpointed` it begins on a fully checkpointed WAL, see suites.hpp). With
// `write` (PostgreSQL only) the transaction also inserts a row, so that it has an xid: a long
// writing transaction, which holds back what a read-only one does not (pg_snapshot_xmin).
// With `none` it holds nothing: the control run, whose "held" windows show how far this host's
// windows stray from the baseline's median when nothing is held (run 59).
class SnapshotHolder {
 public:
  SnapshotHolder(const Target& target, const std::string& kind) {
    if (kind == "none") return;
    const bool write = kind == "write";
    if (write && target.engine != EngineKind::kPostgres) {
      fail("--snapshot-holder write is for PostgreSQL only");
    }
    if (kind == "read-checkpointed" && target.engine != EngineKind::kSqlite) {
      fail("--snapshot-holder read-checkpointed is for SQLite only");
    }
    if (target.engine == EngineKind::kMariadb) {
#if READPAST_BENCH_MARIADB
      mariadb_ = std::make_unique<MariadbSnapshot>(target);
      xmin_ = mariadb_->id();
#endif
    } else if (target.engine == EngineKind::kPostgres) {
      pg_.emplace(target.pg_url);
      if (write)
        pg_->exec("CREATE TABLE IF NOT EXISTS public.bench_snapshot_holder (at timestamptz)");
      pg_->exec("BEGIN ISOLATION LEVEL REPEATABLE READ");
      pg_->scalar("SELECT count(*) FROM pg_class");
      if (write) pg_->exec("INSERT INTO public.bench_snapshot_holder VALUES (now())");
      xmin_ = pg_->scalar("SELECT backend_xmin FROM pg_stat_activity WHERE pid = pg_backend_pid()");
    } else {
      for (const char* file : {"/readpast.db", "/raw.db"}) {
        auto& db = sqlite_.emplace_back(std::make_unique<SqliteDb>(target.sqlite_dir + file));
        // FULL waits for the writers and copies the whole WAL; a read transaction that
        // begins before the next commit reads the database file alone.
        if (kind == "read-checkpointed") db->exec("PRAGMA wal_checkpoint(FULL)");
        db->exec("BEGIN");
        db->scalar_int("SELECT count(*) FROM sqlite_master");
      }
    }
  }
  ~SnapshotHolder() {
    if (pg_) pg_->exec("COMMIT");
    for (auto& db : sqlite_) db->exec("COMMIT");
  }
  const std::string& xmin() const {
    return xmin_;
  }
  // What holding it has cost so far, where the engine tells (MariaDB: InnoDB's history list
  // length, the row versions purge could not remove); nullopt elsewhere.
  std::optional<std::int64_t> backlog() {
#if READPAST_BENCH_MARIADB
    if (mariadb_) return mariadb_->history_length();
#endif
    return std::nullopt;
  }

 private:
#if READPAST_BENCH_MARIADB
  std::unique_ptr<MariadbSnapshot> mariadb_;
#endif
  std::optional<PgConn> pg_;
  std::vector<std::unique_ptr<SqliteDb>> sqlite_;
  std::string xmin_;
};

}  // namespace

void run_snapshot(const Settings& settings, Reporter& reporter) {
  constexpr std::int64_t kBacklog = 20000;  // without a fixed rate, jobs kept waiting
  constexpr std::int64_t kBatch = 100;      // the producer's batches
  const bool fixed_rate = settings.snapshot_rate > 0;
  for (const auto& [system, retention] : subjects_of(settings)) {
    auto subject = make_subject(settings.target, system, retention, settings.snapshot_workers);
    std::vector<std::unique_ptr<Subject>> producers;
    for (int i = 0; i < settings.snapshot_producers; ++i) {
      producers.push_back(make_subject(settings.target, system, retention, 1));
    }
    const std::string label = label_of(*subject, retention);
    subject->reset();
    const std::int64_t prefilled = fixed_rate ? 0 : kBacklog;
    if (prefilled > 0) subject->prefill(prefilled);
    subject->settle();

    std::atomic<std::int64_t> completed{0};
    std::atomic<std::int64_t> enqueued{prefilled};
    LatencyLog lease_latency;
    // The workers stop on this thread's own token, so that an exception below, which
    // destroys it, stops them too instead of waiting for them forever.
    std::jthread worker_thread([&](std::stop_token stop) {
      WorkerSetup setup;
      setup.threads = settings.snapshot_workers;
      setup.batch = settings.snapshot_batch;
      setup.until_empty = false;
      setup.idle_wait = std::chrono::milliseconds(100);
      setup.completed = &completed;
      setup.lease_latency = &lease_latency;
      subject->work(
          setup, [](std::int64_t, std::string_view) {}, std::move(stop));
    });
    // Either keeps the backlog near kBacklog, so that workers never starve (the drain's
    // ceiling), or offers snapshot_rate jobs/s whatever the workers do (does it keep up?);
    // each producer offers its share of the rate.
    std::atomic<std::int64_t> next_seq{prefilled};
    auto produce = [&](Subject& producer, std::stop_token own) {
      const double share = static_cast<double>(std::max(settings.snapshot_rate, 1)) /
                           static_cast<double>(settings.snapshot_producers);
      const auto period = std::chrono::duration<double>(static_cast<double>(kBatch) / share);
      auto next = Clock::now();
      while (!own.stop_requested()) {
        if (fixed_rate) {
          std::this_thread::sleep_until(next);
          next += std::chrono::duration_cast<Clock::duration>(period);
        } else if (enqueued.load() - completed.load() > kBacklog) {
          std::this_thread::sleep_for(std::chrono::microseconds(500));
          continue;
        }
        producer.enqueue_batch(payloads(next_seq.fetch_add(kBatch), kBatch));
        enqueued.fetch_add(kBatch);
      }
    };
    std::vector<std::jthread> producer_threads;
    for (auto& producer : producers) {
      producer_threads.emplace_back(
          [&produce, &producer](std::stop_token own) { produce(*producer, std::move(own)); });
    }

    struct Phase {
      std::vector<double> rates;       // jobs/s of each window
      std::vector<double> lease_p99s;  // µs, of each window
      std::vector<double> lease_us;    // every lease call of the phase
      std::int64_t max_backlog = 0;
      std::int64_t end_backlog = 0;
      std::optional<std::int64_t> max_bytes;
      std::optional<std::int64_t> end_bytes;
      double seconds = 0;                      // how long it ran
      std::optional<std::string> ended_early;  // why, when it ended before its time
    };
    // SQLite: why the hold must end now (its WAL would fill the disk), or nullopt.
    const auto disk_short = [&]() -> std::optional<std::string> {
      if (settings.target.engine != EngineKind::kSqlite) return std::nullopt;
      std::error_code error;
      const auto space = std::filesystem::space(
          settings.target.sqlite_dir.empty() ? "." : settings.target.sqlite_dir, error);
      const double free_gb = static_cast<double>(space.available) / 1e9;
      if (error || free_gb >= settings.snapshot_min_free_gb) return std::nullopt;
      return "less than " + json(settings.snapshot_min_free_gb).dump() +
             " GB free beside the database (--snapshot-min-free-gb)";
    };
    // Windows of snapshot_window_seconds; `guard`, checked after each, may end the phase early.
    auto phase = [&](const std::string& name, double seconds,
                     const std::function<std::optional<std::string>()>& guard = {}) {
      Phase result;
      Progress progress(label + " snapshot " + name, 0);
      const auto start = Clock::now();
      auto window_start = start;
      const std::int64_t phase_start_done = completed.load();
      std::int64_t window_done = phase_start_done;
      lease_latency.take();
      const auto window = std::chrono::duration<double>(settings.snapshot_window_seconds);
      while (seconds_since(start) < seconds) {
        std::this_thread::sleep_until(window_start +
                                      std::chrono::duration_cast<Clock::duration>(window));
        const std::int64_t done = completed.load();
        const double elapsed = seconds_since(window_start);
        const std::vector<double> leases = lease_latency.take();
        const auto p = percentiles(leases);
        const std::int64_t backlog = enqueued.load() - done;
        const std::optional<std::int64_t> bytes = subject->storage_bytes();
        result.rates.push_back(static_cast<double>(done - window_done) / elapsed);
        result.lease_p99s.push_back(p.p99);
        result.lease_us.insert(result.lease_us.end(), leases.begin(), leases.end());
        result.max_backlog = std::max(result.max_backlog, backlog);
        result.end_backlog = backlog;
        if (bytes) result.max_bytes = std::max(result.max_bytes.value_or(0), *bytes);
        result.end_bytes = bytes;
        json line = base_line(*subject, "snapshot_window", result.rates.back(), "jobs/s",
                              done - window_done, settings.snapshot_workers);
        line["system"] = label;
        line["phase"] = name;
        line["t_s"] = std::round(seconds_since(start));
        line["backlog"] = backlog;
        line["leases"] = leases.size();
        line["lease_p50_us"] = p.p50;
        line["lease_p99_us"] = p.p99;
        if (bytes) line["storage_bytes"] = *bytes;
        const json notes = subject->window_notes();
        for (const auto& [key, value] : notes.items()) line[key] = value;
        reporter.emit(std::move(line));
        window_start = Clock::now();
        window_done = done;
        progress.set(done - phase_start_done);
        if (guard) {
          result.ended_early = guard();
          if (result.ended_early) break;
        }
      }
      result.seconds = seconds_since(start);
      return result;
    };
    if (settings.snapshot_warmup_seconds > 0)
      (void)phase("warmup", settings.snapshot_warmup_seconds);
    const Phase baseline = phase("baseline", settings.snapshot_baseline_seconds);
    Phase held;
    std::string xmin;
    std::optional<std::int64_t> history;
    {
      SnapshotHolder holder(settings.target, settings.snapshot_holder);
      xmin = holder.xmin();
      held = phase("held", settings.snapshot_seconds, disk_short);
      history = holder.backlog();
    }
    // After the hold: does the speed come back, and is the space reused or returned?
    const Phase after = phase("after", settings.snapshot_tail_seconds);
    for (auto& t : producer_threads) t.request_stop();
    producer_threads.clear();  // joins
    worker_thread.request_stop();
    worker_thread.join();

    const double normal = baseline.rates.empty() ? 0 : median(baseline.rates);
    const std::size_t last_n =
        std::max<std::size_t>(1, static_cast<std::size_t>(60.0 / settings.snapshot_window_seconds));
    std::vector<double> tail(
        held.rates.end() - static_cast<std::ptrdiff_t>(std::min(last_n, held.rates.size())),
        held.rates.end());
    const double last = tail.empty() ? 0 : median(tail);
    const double min_window =
        held.rates.empty() ? 0 : *std::min_element(held.rates.begin(), held.rates.end());
    json line = base_line(*subject, "snapshot_held_ratio", normal > 0 ? last / normal : 0, "ratio",
                          static_cast<std::int64_t>(held.rates.size()), settings.snapshot_workers);
    line["baseline_jobs_per_s"] = normal;
    line["last_minute_jobs_per_s"] = last;
    line["min_window_jobs_per_s"] = min_window;
    line["min_window_ratio"] = normal > 0 ? min_window / normal : 0;
    line["lease_p99_us_baseline"] = percentiles(baseline.lease_us).p99;
    line["lease_p99_us_held"] = percentiles(held.lease_us).p99;
    line["lease_p99_us_held_worst_window"] =
        held.lease_p99s.empty() ? 0
                                : *std::max_element(held.lease_p99s.begin(), held.lease_p99s.end());
    line["backlog_before_hold"] = baseline.end_backlog;
    line["backlog_max_held"] = held.max_backlog;
    line["backlog_end_held"] = held.end_backlog;
    if (!after.rates.empty()) {
      line["after_jobs_per_s"] = median(after.rates);
      line["backlog_end_after"] = after.end_backlog;
    }
    if (baseline.end_bytes) line["storage_bytes_before_hold"] = *baseline.end_bytes;
    if (held.max_bytes) line["storage_bytes_max_held"] = *held.max_bytes;
    if (after.end_bytes) line["storage_bytes_end_after"] = *after.end_bytes;
    line["held_s"] = std::round(held.seconds);
    if (held.ended_early) line["held_ended_early"] = *held.ended_early;
    line["tail_s"] = settings.snapshot_tail_seconds;
    line["offered_jobs_per_s"] = settings.snapshot_rate;
    line["producers"] = settings.snapshot_producers;
    line["holder"] = settings.snapshot_holder;
    line["snapshot_xmin"] = xmin;
    if (history) line["history_list_length_at_end"] = *history;
    line["options"] =
        std::to_string(settings.snapshot_workers) + " workers, lease batch " +
        std::to_string(settings.snapshot_batch) + ", " +
        std::to_string(settings.snapshot_producers) + " producer(s)" +
        (fixed_rate
             ? " offering " + std::to_string(settings.snapshot_rate) + " jobs/s (batches of 100)"
             : " keeping 20000 jobs waiting (batches of 100)") +
        "; value = median rate of the held phase's last minute / median rate of the baseline; " +
        subject->describe();
    line["system"] = label;
    reporter.say(label + " snapshot_held_ratio = " + line["value"].dump() + ", worst window " +
                 line["min_window_ratio"].dump() + ", lease p99 " +
                 line["lease_p99_us_baseline"].dump() + " -> " + line["lease_p99_us_held"].dump() +
                 " us, backlog " + std::to_string(baseline.end_backlog) + " -> " +
                 std::to_string(held.end_backlog));
    if (held.ended_early) {
      reporter.say(label + " snapshot: the hold ended after " + line["held_s"].dump() +
                   " s: " + *held.ended_early);
    }
    reporter.emit(std::move(line));
    subject->reset();
  }
}

}  // namespace readpast::bench
