// bench/mariadb_parts.hpp — the MariaDB parts of the benchmark, built only when the mariadb
// engine is in READPAST_ENGINES (READPAST_BENCH_MARIADB): the raw-SQL ceiling
// (raw_mariadb_subject.cpp), and the administration of readpast's tables, the held snapshot
// and the server's description (mariadb_admin.cpp), each over mariadb_client.hpp.
//
// Settling a MariaDB table (both subjects' settle()): what PostgreSQL's VACUUM ANALYZE and
// CHECKPOINT do before a timed part. Wait until InnoDB's purge has caught up (the history
// list no longer shrinks: the delete-marked index entries of the last run are gone), ANALYZE
// TABLE, then write the table's dirty pages to disk (FLUSH TABLES ... FOR EXPORT).
//
// Thread-safety: as Subject's (subject.hpp); a MariadbSnapshot is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "subject.hpp"

namespace readpast::bench {

class MdbConn;

std::unique_ptr<Subject> make_raw_mariadb_subject(const Target& target, int threads);
std::unique_ptr<ReadpastTables> make_mariadb_readpast_tables(const Target& target);

// The SQL that sums data and index length of the current database's tables whose names are
// LIKE `pattern`, as InnoDB reports them (its statistics: updated as it samples, not exact).
std::string mariadb_table_bytes_sql(std::string_view pattern);

// Waits for purge, ANALYZE TABLE `table`, flushes its pages (see above).
void settle_mariadb_table(MdbConn& conn, std::string_view table);
// The SELECT that yields rows (queue, payload) of jobs from..to (inclusive), each payload(i)
// built by the server (MariaDB's SEQUENCE engine): how both subjects fill a deep queue.
// `extra_columns` is put before the payload (e.g. "'available', 100, 0, 25").
std::string mariadb_prefill_select(std::int64_t from, std::int64_t to,
                                   std::string_view extra_columns);

// The snapshot suite's transaction on MariaDB: REPEATABLE READ, START TRANSACTION WITH
// CONSISTENT SNAPSHOT and one SELECT, held open until destroyed. Its read view keeps InnoDB's
// purge from removing any row version newer than it, in every table: the analogue of
// PostgreSQL's xmin held back.
class MariadbSnapshot {
 public:
  explicit MariadbSnapshot(const Target& target);
  ~MariadbSnapshot();  // commits
  MariadbSnapshot(const MariadbSnapshot&) = delete;
  MariadbSnapshot& operator=(const MariadbSnapshot&) = delete;

  // "transaction started T (REPEATABLE READ), history list length M": the transaction and
  // InnoDB's purge backlog when the snapshot was taken.
  const std::string& id() const { return id_; }
  // InnoDB's history list length now (it grows while the snapshot is held).
  std::int64_t history_length();

 private:
  std::unique_ptr<MdbConn> conn_;
  std::string id_;
};

// The server's version and the settings that bear on the numbers, for the meta line.
nlohmann::json mariadb_meta(const Target& target);

}  // namespace readpast::bench
