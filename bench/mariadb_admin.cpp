// The MariaDB administration of the benchmark (mariadb_parts.hpp): readpast's tables outside
// every timer, settling a table, the held snapshot, the meta line's description.
#include <chrono>
#include <thread>

#include "common.hpp"
#include "mariadb_client.hpp"
#include "mariadb_parts.hpp"

namespace readpast::bench {
namespace {

constexpr std::int64_t kPrefillChunk = 1'000'000;

std::int64_t read_history_length(MdbConn& conn) {
  return conn.scalar_int(
      "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
      "WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH'");
}

// readpast's tables (src/engines/mariadb/sql/migrations), through a connection of the
// benchmark's own.
class MariadbTables final : public ReadpastTables {
 public:
  explicit MariadbTables(const Target& target) : conn_(target.mariadb_url) {}

  // The error history's foreign key refuses a TRUNCATE of the jobs it references, even empty:
  // both tables are emptied with the checks off for this session (bench databases only).
  void reset() override {
    conn_.exec("SET SESSION foreign_key_checks = 0");
    conn_.exec("TRUNCATE TABLE readpast_job_errors");
    conn_.exec("TRUNCATE TABLE readpast_jobs");
    conn_.exec("SET SESSION foreign_key_checks = 1");
  }

  void prefill(std::int64_t n) override {
    // Rows inserted by plain SQL are ordinary jobs (docs/mariadb.md); times are the server's
    // microseconds since the epoch, as the engine's :now.
    const std::string now = std::to_string(
        conn_.scalar_int(
            "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))") -
        1000);
    for (std::int64_t from = 1; from <= n; from += kPrefillChunk) {
      conn_.exec(
          "INSERT INTO readpast_jobs (queue, state, priority, run_at, attempts, max_attempts, "
          "enqueued_at, payload) " +
          mariadb_prefill_select(from, std::min(n, from + kPrefillChunk - 1),
                                 "'available', 100, " + now + ", 0, 25, " + now));
    }
  }

  void settle() override { settle_mariadb_table(conn_, "readpast_jobs"); }

  std::int64_t unfinished() override {
    return conn_.scalar_int(
        "SELECT count(*) FROM readpast_jobs WHERE state IN ('available', 'running')");
  }
  std::optional<std::int64_t> storage_bytes() override {
    return conn_.scalar_int(mariadb_table_bytes_sql("readpast\\_%"));
  }

 private:
  MdbConn conn_;
};

}  // namespace

std::unique_ptr<ReadpastTables> make_mariadb_readpast_tables(const Target& target) {
  return std::make_unique<MariadbTables>(target);
}

void settle_mariadb_table(MdbConn& conn, std::string_view table) {
  // Purge first (it changes pages), until the history list is empty or has not shrunk for
  // 2 s (the server's own statistics keep a few entries coming), at most 5 minutes.
  const auto deadline = Clock::now() + std::chrono::minutes(5);
  std::int64_t last = read_history_length(conn);
  auto last_progress = Clock::now();
  while (last > 0 && Clock::now() < deadline &&
         Clock::now() - last_progress < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::int64_t now = read_history_length(conn);
    if (now < last) last_progress = Clock::now();
    last = now;
  }
  const std::string name(table);
  conn.exec("ANALYZE TABLE " + name);
  // FOR EXPORT: returns once every change to the table is written to its tablespace file.
  conn.exec("FLUSH TABLES " + name + " FOR EXPORT; UNLOCK TABLES");
}

std::string mariadb_table_bytes_sql(std::string_view pattern) {
  return "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables "
         "WHERE table_schema = DATABASE() AND table_name LIKE '" +
         std::string(pattern) + "'";
}

std::string mariadb_prefill_select(std::int64_t from, std::int64_t to,
                                   std::string_view extra_columns) {
  // The same text as payload(i), written in SQL.
  return "SELECT '" + std::string(kQueue) + "', " +
         (extra_columns.empty() ? std::string() : std::string(extra_columns) + ", ") +
         "CONCAT('{\"seq\":', seq, ',\"user_id\":', 100000 + seq % 900000, "
         "',\"action\":\"send_welcome_email\",\"email\":\"user', 100000 + seq % 900000, "
         "'@example.com\",\"locale\":\"en-GB\"}') FROM seq_" +
         std::to_string(from) + "_to_" + std::to_string(to);
}

// ---- the held snapshot

MariadbSnapshot::MariadbSnapshot(const Target& target)
    : conn_(std::make_unique<MdbConn>(target.mariadb_url)) {
  conn_->exec("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
  conn_->exec("START TRANSACTION WITH CONSISTENT SNAPSHOT");
  conn_->scalar("SELECT count(*) FROM mysql.innodb_table_stats");  // an InnoDB table
  // A read-only transaction has no trx_id of its own (0): it is named by when it started.
  id_ = "transaction started " +
        conn_->scalar(
            "SELECT CONCAT(trx_started, ' (', trx_isolation_level, ')') "
            "FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = CONNECTION_ID()") +
        ", history list length " + std::to_string(read_history_length(*conn_));
}

MariadbSnapshot::~MariadbSnapshot() {
  try {
    conn_->exec("COMMIT");
  } catch (const std::exception&) {
    // The connection is closed next, which ends the transaction as well.
  }
}

std::int64_t MariadbSnapshot::history_length() {
  return read_history_length(*conn_);
}

// ---- the meta line

nlohmann::json mariadb_meta(const Target& target) {
  MdbConn conn(target.mariadb_url);
  nlohmann::json settings = nlohmann::json::object();
  for (const char* name :
       {"innodb_buffer_pool_size", "max_connections", "innodb_flush_log_at_trx_commit",
        "innodb_doublewrite", "innodb_log_file_size", "innodb_flush_method", "log_bin",
        "sync_binlog", "innodb_io_capacity", "innodb_purge_threads", "thread_handling",
        "performance_schema"}) {
    settings[name] = conn.scalar(std::string("SELECT @@GLOBAL.") + name);
  }
  return {{"mariadb", conn.scalar("SELECT VERSION()")}, {"mariadb_settings", settings}};
}

}  // namespace readpast::bench
