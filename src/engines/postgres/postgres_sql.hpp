// engines/postgres/postgres_sql.hpp — every SQL statement of the PostgreSQL engine, in one
// place (postgres_sql.cpp), and the schema's migrations.
//
// The text is written with two placeholders, expanded once per engine by Sql's constructor:
//   {S}        the schema, as a quoted identifier ("readpast")
//   {CHANNEL}  the NOTIFY channel, as a string literal ('readpast.jobs')
// The schema name is the only text ever spliced into SQL; it is validated like a queue name
// first (SchemaName::parse) and quoted. Everything else is a bound parameter.
//
// Time: every statement reads the database's clock through statement_timestamp(), the time
// the current client statement started. It is the same value everywhere within a statement
// (so run_at <= t, lease_expires_at = t + d and started_at = t agree), and unlike now() it
// does not stand still inside a caller's long transaction (the SQL functions and the outbox
// run in the caller's transactions).
//
// Parameters are sent and results read in binary format (see pg_values.hpp); every parameter
// has an explicit cast, from which the server infers its type.
//
// Thread-safety: Sql is immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "readpast/error.hpp"

namespace readpast::detail::pg {

// The schema version this build creates and understands.
inline constexpr int kSchemaVersion = 4;

// A validated schema name and the identifiers derived from it.
struct SchemaName {
  std::string name;     // as given, e.g. readpast
  std::string quoted;   // "readpast"
  std::string channel;  // readpast.jobs: the LISTEN/NOTIFY channel
  // Schema names follow the queue-name rule ([A-Za-z0-9][A-Za-z0-9_.-]*) and are at most
  // 58 bytes, so that "<schema>.jobs" fits PostgreSQL's 63-byte identifiers.
  static Result<SchemaName> parse(std::string_view name);
};

// One statement of the engine: a stable name, under which each connection prepares it once.
struct Statement {
  std::string name;
  std::string sql;
};

struct Sql {
  explicit Sql(const SchemaName& schema);

  // schema_version: () → max(version) (NULL when the table is empty)
  Statement schema_version;
  // enqueue: ($1 queue text[], $2 payload bytea[], $3 priority int[], $4 run_at timestamptz[],
  //   $5 delay_us bigint[], $6 max_attempts int[], $7 unique_key text[]) → per input row in
  //   order: (ord bigint, id bigint, inserted bool); id is NULL when the key's holder was not
  //   visible to this statement (see pg_jobs.cpp).
  Statement enqueue;
  // enqueue_one / enqueue_many: jobs without unique keys. enqueue_one: ($1 queue, $2 payload,
  //   $3 priority, $4 run_at, $5 delay_us, $6 max_attempts) → (id); enqueue_many: the same
  //   as arrays → (id) per job, ids increasing in input order.
  Statement enqueue_one;
  Statement enqueue_many;
  // enqueue_uniform: jobs that differ only in their payloads: ($1 queue, $2 payloads
  //   bytea[], $3 priority, $4 run_at, $5 delay_us, $6 max_attempts) → (id) per job, ids
  //   increasing in input order.
  Statement enqueue_uniform;
  // lease: ($1 queue, $2 worker, $3 lease_us bigint, $4 tokens uuid[] with at least max_jobs
  //   fresh random tokens, $5 max_jobs int) → job rows. lease_with_limit(n) is the same
  //   statement with LIMIT n written into its text and without $5: PostgreSQL caches a plan
  //   for it (see kLeaseSql). The number is formatted from an int, never from text.
 private:
  std::string lease_template_;  // declared before `lease`, which is built from it

 public:
  Statement lease;
  Statement lease_with_limit(int max_jobs) const;
  // Fenced batch settling; each returns (id, token) of the refs that held their lease.
  // complete / complete_delete: ($1 ids bigint[], $2 tokens uuid[])
  Statement complete;
  Statement complete_delete;
  // fail: ($1 ids, $2 tokens, $3 errors text[], $4 retry_after_us bigint[] (NULL: backoff),
  //   $5 base_us bigint[], $6 cap_us bigint[], $7 factor float8[], $8 no_retry bool[])
  //   → (id, token, state)
  Statement fail;
  // extend: ($1 ids, $2 tokens, $3 lease_us bigint)
  Statement extend;
  // release: ($1 ids, $2 tokens, $3 delay_us bigint)
  Statement release;
  // rescue: ($1 queue, $2 batch int) → affected rows
  Statement rescue;
  // cancel, retry: ($1 ids bigint[]) → changed ids
  Statement cancel;
  Statement retry;
  // retry_all: ($1 queue, $2 state) → affected rows
  Statement retry_all;
  // purge: ($1 queue, $2 state, $3 cutoff timestamptz, $4 batch int) → affected rows
  Statement purge;
  // now: () → statement_timestamp(), to fix purge's cutoff once on the database's clock
  Statement now;
  // next_due: ($1 queue) → microseconds until its next available job is due, or NULL
  Statement next_due;
  // stats: ($1 queue text, NULL for all) → (queue, available, scheduled, running, succeeded,
  //   dead, cancelled, oldest_available_age_us)
  Statement stats;
  // list_*: ($1 after_id bigint, $2 limit int[, $3 queue][, $3|$4 state]) → job rows.
  // One statement per filter combination, so that each gets a plan that fits it.
  Statement list_all;
  Statement list_queue;
  Statement list_state;
  Statement list_queue_state;
  // get: ($1 id) → a job row
  Statement get;
  // finished_since: ($1 since timestamptz, $2 queue text or NULL) → (queue, succeeded, dead)
  Statement finished_since;
  // pause, resume: ($1 queue); resume notifies the queue's listeners when it was paused
  Statement pause;
  Statement resume;
  // upsert_schedule: ($1 name, $2 queue, $3 spec, $4 payload bytea, $5 priority int,
  //   $6 max_attempts int) → (created bool)
  Statement upsert_schedule;
  // list_schedules: () → (name, queue, spec, payload, priority, max_attempts, created_at,
  //   last_tick_at)
  Statement list_schedules;
  // delete_schedule: ($1 name) → affected rows
  Statement delete_schedule;
  // enqueue_tick: ($1 name, $2 tick timestamptz, $3 unique_key) → (id) when it enqueued
  Statement enqueue_tick;
  // claim_task: ($1 task, $2 interval_us bigint, $3 by) → a row when claimed
  Statement claim_task;

  // migrate: the statements migrate() runs, in a transaction, under the advisory lock.
  std::string create_schema;            // CREATE SCHEMA IF NOT EXISTS + version table
  std::vector<std::string> migrations;  // migrations[v - 1] upgrades v - 1 → v
};

}  // namespace readpast::detail::pg
