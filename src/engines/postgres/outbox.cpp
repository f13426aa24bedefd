// The transactional outbox: readpast/postgres.hpp.
#include <libpq-fe.h>

#include "core/validate.hpp"
#include "engines/postgres/pg_connection.hpp"
#include "engines/postgres/pg_jobs.hpp"
#include "engines/postgres/postgres_sql.hpp"
#include "readpast/postgres.hpp"

namespace readpast::postgres {

Result<std::vector<Enqueued>> enqueue_batch(PGconn* conn, std::span<const NewJob> jobs,
                                            const OutboxOptions& options) {
  if (conn == nullptr) return fail_with(Error::invalid_argument("outbox: connection is null"));
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (auto ok = detail::validate_new_job(jobs[i], options.max_payload_bytes); !ok) {
      if (jobs.size() == 1) return fail_with(ok.error());
      return fail_with(Error::invalid_argument("job " + std::to_string(i + 1) +
                                               " of the batch: " + ok.error().message));
    }
  }
  auto schema = detail::pg::SchemaName::parse(options.schema);
  if (!schema) return fail_with(schema.error());
  if (jobs.empty()) return std::vector<Enqueued>{};

  if (PQstatus(conn) != CONNECTION_OK) {
    return fail_with(Error::unavailable("outbox: the connection to PostgreSQL is not open"));
  }
  const PGTransactionStatusType status = PQtransactionStatus(conn);
  if (status == PQTRANS_INERROR) {
    return fail_with(Error::invalid_argument(
        "outbox: the connection's transaction is aborted; roll it back first"));
  }
  if (status != PQTRANS_IDLE && status != PQTRANS_INTRANS) {
    return fail_with(Error::invalid_argument("outbox: the connection is busy with a command"));
  }

  const detail::pg::Sql sql(*schema);
  auto connection = detail::pg::Connection::borrow(conn);
  // In the caller's transaction, the jobs join it. Outside one, a batch with unique keys
  // (which may take a second statement) gets a transaction of its own.
  if (status == PQTRANS_INTRANS || !detail::pg::any_unique_key(jobs)) {
    return detail::pg::enqueue_jobs(connection, sql, jobs);
  }
  auto transaction = detail::pg::Transaction::begin(connection);
  if (!transaction) return fail_with(transaction.error());
  auto results = detail::pg::enqueue_jobs(connection, sql, jobs);
  if (!results) return results;
  if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
  return results;
}

Result<Enqueued> enqueue(PGconn* conn, const NewJob& job, const OutboxOptions& options) {
  auto results = enqueue_batch(conn, std::span<const NewJob>(&job, 1), options);
  if (!results) return fail_with(results.error());
  return results->front();
}

}  // namespace readpast::postgres
