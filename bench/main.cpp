// readpast_bench — throughput and latency of readpast on SQLite, PostgreSQL and MariaDB, each
// number beside the raw-SQL ceiling of the same job lifecycle measured in the same run.
//
//   readpast_bench run --engine postgres --pg-url URL [options]   the suites; JSON lines out
//   readpast_bench run --engine mariadb --mariadb-url URL [options]   (mariadb builds)
//   readpast_bench run --engine sqlite [--sqlite-dir DIR] [options]
//   readpast_bench harness [enqueue] [drain] [latency]   one system of the peer harness
//
// `readpast_bench run --help` lists the options; docs/benchmarks.md explains every metric.
#include <sqlite3.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "children.hpp"
#include "common.hpp"
#include "harness.hpp"
#include "pg_client.hpp"
#include "readpast/version.hpp"
#include "suites.hpp"

#if READPAST_BENCH_MARIADB
#include "mariadb_parts.hpp"
#endif

namespace readpast::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<DrainShape> parse_shapes(const std::string& text) {
  // "1x8,4x1": processes x threads
  std::vector<DrainShape> shapes;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto comma = text.find(',', at);
    const std::string item =
        text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto x = item.find('x');
    if (x == std::string::npos) fail("drain shape '" + item + "' is not PROCESSESxTHREADS");
    shapes.push_back(DrainShape{std::stoi(item.substr(0, x)), std::stoi(item.substr(x + 1)), 1});
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return shapes;
}

json meta_line(const Settings& settings, const std::vector<std::string>& suites) {
  json meta = {{"system", "_meta"},
               {"metric", "meta"},
               {"engine", settings.target.name()},
               {"readpast_version", kVersion},
               {"suites", suites},
               {"nproc", ::sysconf(_SC_NPROCESSORS_ONLN)}};
  std::ifstream loadavg("/proc/loadavg");
  std::string load;
  std::getline(loadavg, load);
  meta["loadavg_at_start"] = load;
  meta["started_unix"] = wall_micros() / 1000000;
  if (settings.target.engine == EngineKind::kPostgres) {
    PgConn c(settings.target.pg_url);
    meta["postgres"] = c.scalar("SELECT version()");
    json pg_settings = json::object();
    for (const char* name : {"shared_buffers", "max_connections", "synchronous_commit", "fsync",
                             "full_page_writes", "wal_level", "max_wal_size"}) {
      pg_settings[name] = c.scalar(std::string("SELECT current_setting('") + name + "')");
    }
    meta["postgres_settings"] = pg_settings;
  } else if (settings.target.engine == EngineKind::kMariadb) {
#if READPAST_BENCH_MARIADB
    meta.update(mariadb_meta(settings.target));
#endif
  } else {
    meta["sqlite"] = sqlite3_libversion();
    meta["sqlite_synchronous"] = settings.target.sqlite_synchronous;
    if (settings.target.sqlite_page_size > 0) {
      meta["sqlite_page_size"] = settings.target.sqlite_page_size;
    }
    if (settings.target.sqlite_cache_mib > 0) {
      meta["sqlite_cache_mib"] = settings.target.sqlite_cache_mib;
    }
  }
  meta["settings"] = {{"n_single", settings.n_single},
                      {"n_batch", settings.n_batch},
                      {"drain_n_small", settings.drain_n_small},
                      {"drain_n_large", settings.drain_n_large},
                      {"latency_rate", settings.latency_rate},
                      {"latency_seconds", settings.latency_seconds},
                      {"depths", settings.depths},
                      {"snapshot_seconds", settings.snapshot_seconds},
                      {"snapshot_rate", settings.snapshot_rate},
                      {"snapshot_producers", settings.snapshot_producers},
                      {"snapshot_tail_seconds", settings.snapshot_tail_seconds},
                      {"snapshot_min_free_gb", settings.snapshot_min_free_gb},
                      {"snapshot_holder", settings.snapshot_holder}};
  return meta;
}

int run_main(Settings settings, const std::vector<std::string>& suites, const std::string& out,
             bool temporary_dir) {
  std::FILE* file = stdout;
  if (!out.empty() && out != "-") {
    file = std::fopen(out.c_str(), "a");
    if (file == nullptr) fail("cannot open " + out);
  }
  json common = {{"engine", settings.target.name()}};
  if (settings.target.engine == EngineKind::kSqlite) {
    common["sqlite_synchronous"] = settings.target.sqlite_synchronous;
  }
  Reporter reporter(file, common);
  int rc = 0;
  try {
    reporter.emit(meta_line(settings, suites));
    for (const auto& suite : suites) {
      reporter.say("== " + settings.target.name() + ": " + suite);
      if (suite == "enqueue") {
        run_enqueue(settings, reporter);
      } else if (suite == "drain") {
        run_drain(settings, reporter);
      } else if (suite == "latency") {
        run_latency(settings, reporter);
      } else if (suite == "depth") {
        run_depth(settings, reporter);
      } else if (suite == "snapshot") {
        run_snapshot(settings, reporter);
      } else {
        fail("unknown suite '" + suite + "' (enqueue, drain, latency, depth, snapshot)");
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "readpast_bench: " << e.what() << "\n";
    rc = 1;
  }
  if (file != stdout) std::fclose(file);
  if (temporary_dir) {
    std::error_code ignored;
    fs::remove_all(settings.target.sqlite_dir, ignored);
  }
  return rc;
}

}  // namespace
}  // namespace readpast::bench

int main(int argc, char** argv) {
  using namespace readpast::bench;
  CLI::App app{"readpast_bench: readpast beside the raw-SQL ceiling of the same job lifecycle"};
  app.require_subcommand(1);

  // ---- run ----
  Settings settings;
  std::string engine = "sqlite";
  std::string suites_text = "enqueue,drain,latency,depth";
  std::string systems_text = "raw,readpast";
  std::string retentions_text = "delete";
  std::string shapes_text;
  std::string batches_text = "1,10,100,1000";
  std::string enqueue_batches_text = "100,1000";
  std::string depths_text = "10000,1000000";
  std::string depth_batches_text = "1,100";
  std::string out;
  bool quick = false;
  auto* run = app.add_subcommand("run", "Run benchmark suites; JSON lines on stdout or --out");
  run->add_option("--engine", engine, "sqlite, postgres or mariadb")
      ->check(CLI::IsMember({"sqlite", "postgres", "mariadb"}));
  run->add_option("--pg-url", settings.target.pg_url, "PostgreSQL URL (with --engine postgres)");
  run->add_option("--readpast-pg-url", settings.target.readpast_pg_url,
                  "readpast's own URL of the same database (e.g. with ?pool_mode=transaction, "
                  "or through PgBouncer); default: --pg-url");
  run->add_option("--mariadb-url", settings.target.mariadb_url,
                  "MariaDB URL, mariadb://USER[:PASSWORD]@HOST[:PORT]/DATABASE (with --engine "
                  "mariadb; both subjects use it)");
  run->add_option("--sqlite-synchronous", settings.target.sqlite_synchronous,
                  "full (readpast's default) or normal, for both subjects")
      ->check(CLI::IsMember({"full", "normal"}))
      ->capture_default_str();
  run->add_option("--sqlite-cache-mib", settings.target.sqlite_cache_mib,
                  "readpast's page cache per SQLite connection, MiB (0: readpast's default)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--sqlite-page-size", settings.target.sqlite_page_size,
                  "the page size of both subjects' new SQLite files (0: readpast's default)")
      ->check(CLI::IsMember({0, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}));
  run->add_option("--sqlite-dir", settings.target.sqlite_dir,
                  "directory for the SQLite files (default: a new temporary one, removed after)");
  run->add_option("--suites", suites_text, "enqueue,drain,latency,depth,snapshot")
      ->capture_default_str();
  run->add_option("--systems", systems_text,
                  "raw,readpast (and ring: the prototype of docs/postgres-storage.md)")
      ->capture_default_str();
  run->add_option("--retention", retentions_text,
                  "readpast retention.succeeded: delete (0), keep (24h), or both: delete,keep")
      ->capture_default_str();
  run->add_option("--n-single", settings.n_single, "jobs enqueued one by one")
      ->capture_default_str();
  run->add_option("--n-batch", settings.n_batch, "jobs enqueued in batches")->capture_default_str();
  run->add_option("--enqueue-batches", enqueue_batches_text)->capture_default_str();
  run->add_option("--drain-shapes", shapes_text,
                  "PROCESSESxTHREADS list (default postgres and mariadb 1x1,1x4,1x8,1x16; sqlite "
                  "the same and 4x1)");
  run->add_option("--drain-batches", batches_text, "lease batch sizes")->capture_default_str();
  run->add_option("--drain-n-small", settings.drain_n_small, "jobs per drain, batches < 100")
      ->capture_default_str();
  run->add_option("--drain-n-large", settings.drain_n_large, "jobs per drain, batches >= 100")
      ->capture_default_str();
  run->add_option("--latency-rate", settings.latency_rate, "jobs/s")->capture_default_str();
  run->add_option("--latency-seconds", settings.latency_seconds)->capture_default_str();
  run->add_option("--latency-workers", settings.latency_workers)->capture_default_str();
  run->add_option("--depths", depths_text, "queue depths (add 10000000 for 10M)")
      ->capture_default_str();
  run->add_option("--depth-batches", depth_batches_text)->capture_default_str();
  run->add_option("--depth-cycles", settings.depth_cycles)->capture_default_str();
  run->add_option("--snapshot-seconds", settings.snapshot_seconds, "how long the snapshot is held")
      ->capture_default_str();
  run->add_option("--snapshot-warmup-seconds", settings.snapshot_warmup_seconds,
                  "windows before the baseline, reported as phase warmup and left out of it")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--snapshot-baseline-seconds", settings.snapshot_baseline_seconds)
      ->capture_default_str();
  run->add_option("--snapshot-window-seconds", settings.snapshot_window_seconds)
      ->capture_default_str();
  run->add_option("--snapshot-rate", settings.snapshot_rate,
                  "jobs/s offered during the snapshot suite (0: keep 20000 jobs waiting)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--snapshot-producers", settings.snapshot_producers,
                  "producer threads, each on its own connection (the rate is shared)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  run->add_option("--snapshot-holder", settings.snapshot_holder,
                  "read: the held transaction only reads; write: it also writes a row "
                  "(PostgreSQL: a long writing transaction); read-checkpointed (SQLite): it "
                  "begins right after a FULL checkpoint, on a WAL with nothing to copy; none: "
                  "nothing is held, a control run of the same phases")
      ->check(CLI::IsMember({"read", "write", "read-checkpointed", "none"}))
      ->capture_default_str();
  run->add_option("--snapshot-tail-seconds", settings.snapshot_tail_seconds,
                  "how long to go on measuring after the snapshot is released")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--snapshot-min-free-gb", settings.snapshot_min_free_gb,
                  "SQLite: end the hold early once the database's directory has less free "
                  "space than this (the WAL grows by every commit while a reader is held)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--out", out, "append JSON lines to this file instead of stdout");
  run->add_flag("--quick", quick, "tiny sizes, for a smoke test");

  // ---- child-work (internal) ----
  std::string child_system = "readpast";
  std::string child_retention = "delete";
  WorkerSetup child_setup;
  auto* child = app.add_subcommand("child-work", "(internal) one worker process of a drain");
  child->group("");
  child->add_option("--engine", engine);
  child->add_option("--pg-url", settings.target.pg_url);
  child->add_option("--readpast-pg-url", settings.target.readpast_pg_url);
  child->add_option("--mariadb-url", settings.target.mariadb_url);
  child->add_option("--sqlite-dir", settings.target.sqlite_dir);
  child->add_option("--sqlite-synchronous", settings.target.sqlite_synchronous);
  child->add_option("--sqlite-cache-mib", settings.target.sqlite_cache_mib);
  child->add_option("--sqlite-page-size", settings.target.sqlite_page_size);
  child->add_option("--system", child_system);
  child->add_option("--retention", child_retention);
  child->add_option("--threads", child_setup.threads);
  child->add_option("--batch", child_setup.batch);

  // ---- harness ----
  std::vector<std::string> harness_parts;
  auto* harness = app.add_subcommand(
      "harness", "readpast as a system of the peer harness (BENCH_PG_URL, BENCH_N, ... from env)");
  harness->add_option("parts", harness_parts, "enqueue, drain, latency (default: all)");

  CLI11_PARSE(app, argc, argv);

  try {
    settings.target.engine = engine == "postgres"  ? EngineKind::kPostgres
                             : engine == "mariadb" ? EngineKind::kMariadb
                                                   : EngineKind::kSqlite;
    if (settings.target.engine == EngineKind::kMariadb && !kHaveMariadb) {
      std::cerr << "readpast_bench: built without the mariadb engine (READPAST_ENGINES)\n";
      return 2;
    }
    if (*harness) return harness_main(harness_parts);
    if (*child) {
      auto subject =
          make_subject(settings.target, child_system, child_retention, child_setup.threads);
      return child_work_main(*subject, child_setup);
    }

    if (settings.target.engine == EngineKind::kPostgres && settings.target.pg_url.empty()) {
      std::cerr << "readpast_bench: --engine postgres needs --pg-url\n";
      return 2;
    }
    if (settings.target.engine == EngineKind::kMariadb && settings.target.mariadb_url.empty()) {
      std::cerr << "readpast_bench: --engine mariadb needs --mariadb-url\n";
      return 2;
    }
    bool temporary_dir = false;
    if (settings.target.engine == EngineKind::kSqlite && settings.target.sqlite_dir.empty()) {
      std::string pattern = (std::filesystem::temp_directory_path() / "readpast-bench-XXXXXX");
      if (::mkdtemp(pattern.data()) == nullptr) fail("mkdtemp failed");
      settings.target.sqlite_dir = pattern;
      temporary_dir = true;
    }
    std::filesystem::create_directories(settings.target.sqlite_dir.empty()
                                            ? std::filesystem::path(".")
                                            : std::filesystem::path(settings.target.sqlite_dir));
    auto split = [](const std::string& text) {
      std::vector<std::string> items;
      std::size_t at = 0;
      while (at <= text.size()) {
        const auto comma = text.find(',', at);
        items.push_back(
            text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
      return items;
    };
    settings.systems = split(systems_text);
    settings.retentions = split(retentions_text);
    settings.enqueue_batches = parse_list(enqueue_batches_text);
    settings.drain_batches = parse_list(batches_text);
    settings.depths = parse_list(depths_text);
    settings.depth_batches = parse_list(depth_batches_text);
    if (shapes_text.empty()) {
      shapes_text = settings.target.engine == EngineKind::kSqlite ? "1x1,1x4,1x8,1x16,4x1"
                                                                  : "1x1,1x4,1x8,1x16";
    }
    settings.drain_shapes = parse_shapes(shapes_text);
    if (quick) {
      settings.n_single = 300;
      settings.n_batch = 2000;
      settings.enqueue_batches = {100};
      settings.drain_shapes = {DrainShape{1, 2, 1}, DrainShape{2, 1, 1}};
      settings.drain_batches = {10};
      settings.drain_n_small = 500;
      settings.drain_n_large = 500;
      settings.latency_rate = 100;
      settings.latency_seconds = 0.5;
      settings.latency_workers = 2;
      settings.depths = {100, 1000};
      settings.depth_batches = {1};
      settings.depth_cycles = 20;
      settings.snapshot_warmup_seconds = 0;
      settings.snapshot_baseline_seconds = 0.5;
      settings.snapshot_seconds = 0.5;
      settings.snapshot_window_seconds = 0.25;
      settings.snapshot_tail_seconds = 0.5;
      settings.snapshot_workers = 2;
    }
    settings.child_args = {"child-work", "--engine", engine};
    if (settings.target.engine == EngineKind::kPostgres) {
      settings.child_args.insert(settings.child_args.end(), {"--pg-url", settings.target.pg_url});
      if (!settings.target.readpast_pg_url.empty()) {
        settings.child_args.insert(settings.child_args.end(),
                                   {"--readpast-pg-url", settings.target.readpast_pg_url});
      }
    } else if (settings.target.engine == EngineKind::kMariadb) {
      settings.child_args.insert(settings.child_args.end(),
                                 {"--mariadb-url", settings.target.mariadb_url});
    } else {
      settings.child_args.insert(
          settings.child_args.end(),
          {"--sqlite-dir", settings.target.sqlite_dir, "--sqlite-synchronous",
           settings.target.sqlite_synchronous, "--sqlite-cache-mib",
           std::to_string(settings.target.sqlite_cache_mib), "--sqlite-page-size",
           std::to_string(settings.target.sqlite_page_size)});
    }
    return run_main(std::move(settings), split(suites_text), out, temporary_dir);
  } catch (const std::exception& e) {
    std::cerr << "readpast_bench: " << e.what() << "\n";
    return 1;
  }
}
