// The fixture of the CLI tests: a fresh database (initialised with `readpast init`) and
// shorthands for running readpast against it. The database is a SQLite file in a temporary
// directory, or, with READPAST_CLI_ENGINE=NAME, a fresh database of that engine under test
// (support/engines.hpp): an engine's folder runs the suite on it that way. (The tests that
// are about SQLite files name their own databases.)
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "support/engines.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* engine = std::getenv("READPAST_CLI_ENGINE");
    // On an engine under test, the schema may be there already (PostgreSQL's databases are
    // copies of one migrated once): the init below then finds it, as a second init does.
    db_ = engine != nullptr && *engine != '\0' ? engine_named(engine).fresh_url_to_init()
                                               : "sqlite:" + dir_.file("jobs.db");
    auto r = rp({"init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // readpast --db DB ARGS...
  RunResult rp(std::vector<std::string> args, RunOptions options = {}) {
    args.insert(args.begin(), {"--db", db_});
    return run_readpast(dir_.path(), args, options);
  }
  std::unique_ptr<ReadpastProcess> start(std::vector<std::string> args, RunOptions options = {}) {
    args.insert(args.begin(), {"--db", db_});
    return std::make_unique<ReadpastProcess>(dir_.path(), args, options);
  }

  // Enqueues `payload` through stdin; returns the id (0 after a failed expectation).
  std::int64_t enqueue(const std::string& queue, const std::string& payload,
                       std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"enqueue", queue, "-"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = rp(args, input(payload));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return 0;
    return std::stoll(r.out);
  }

  // readpast work QUEUE --exec CMD --drain EXTRA..., expected to exit 0.
  RunResult drain(const std::string& queue, const std::string& command,
                  std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"work", queue, "--exec", command, "--drain"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = rp(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r;
  }

  nlohmann::json show(std::int64_t id) {
    auto r = rp({"show", std::to_string(id), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
  }

  // The stats of one queue from `stats --json`.
  nlohmann::json stats(const std::string& queue) {
    auto r = rp({"stats", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto all = nlohmann::json::parse(r.out);
    auto queues = all.at("queues");
    if (!queues.contains(queue)) {
      return {{"available", 0}, {"scheduled", 0}, {"running", 0},   {"expired", 0},
              {"succeeded", 0}, {"dead", 0},      {"cancelled", 0}, {"oldest_available_age_s", 0}};
    }
    return queues.at(queue);
  }

  std::string path(const std::string& name) const { return dir_.file(name); }

  TempDir dir_;
  std::string db_;
};

// True when `err` is exactly one line "readpast: ...\n".
inline ::testing::AssertionResult is_one_line_reason(const std::string& err) {
  if (!err.starts_with("readpast: ")) {
    return ::testing::AssertionFailure() << "stderr does not start with 'readpast: ': " << err;
  }
  if (err.empty() || err.back() != '\n' || err.find('\n') != err.size() - 1) {
    return ::testing::AssertionFailure() << "stderr is not one line: " << err;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace readpast::test
