// readpast/postgres.hpp — enqueue on a PostgreSQL connection the application owns, inside
// the application's own transaction (the transactional outbox).
//
//   PQexec(conn, "BEGIN");
//   PQexec(conn, "INSERT INTO orders ...");
//   auto id = readpast::postgres::enqueue(conn, {.queue = "emails", .payload = json});
//   PQexec(conn, "COMMIT");   // the order and its job become visible together
//
// A rolled-back transaction leaves no job; a committed one leaves exactly one. Workers
// are woken when the transaction commits (the NOTIFY is transactional too).
//
// Requirements: `readpast init` has created the schema; the connection uses the simple
// synchronous libpq API (not pipeline mode, no command in progress). On a connection in a
// transaction, the job joins that transaction, and a failure aborts it like any failed
// statement would (use a SAVEPOINT to survive one). On a connection outside a
// transaction, the call commits by itself. Statements are not prepared on the caller's
// connection, so its own prepared-statement names are never touched.
//
// Validation is Queue's: the queue name (validate_queue_name), the payload limit, the
// attempts, delay and unique key — before anything is sent.
//
// Thread-safety: the functions keep no state; a PGconn must be used by one thread at a
// time, as libpq requires.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "readpast/error.hpp"
#include "readpast/job.hpp"

// libpq's connection type, declared as <libpq-fe.h> does, so that this header does not
// need libpq's include path.
typedef struct pg_conn PGconn;

namespace readpast::postgres {

struct OutboxOptions {
  // The PostgreSQL schema that `readpast init` created. Default: "readpast".
  std::string schema = "readpast";
  // Payloads larger than this are rejected before anything is sent. Default: 16 MiB.
  std::size_t max_payload_bytes = 16u << 20;
};

// Enqueues one job in the connection's current transaction. With a unique key held by a
// live job of the queue, returns that job's id and inserted = false.
Result<Enqueued> enqueue(PGconn* conn, const NewJob& job, const OutboxOptions& options = {});

// Many jobs in one statement (usually); all or nothing.
Result<std::vector<Enqueued>> enqueue_batch(PGconn* conn, std::span<const NewJob> jobs,
                                            const OutboxOptions& options = {});

}  // namespace readpast::postgres
