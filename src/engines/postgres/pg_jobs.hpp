// engines/postgres/pg_jobs.hpp — what the engine and the outbox (readpast/postgres.hpp)
// share: the batch enqueue and reading a job row.
//
// Thread-safety: free functions; the connection is the caller's for the duration.
#pragma once

#include <span>
#include <vector>

#include "engines/postgres/lease_frontier.hpp"
#include "engines/postgres/pg_connection.hpp"
#include "engines/postgres/postgres_sql.hpp"
#include "readpast/job.hpp"

namespace readpast::detail::pg {

// Enqueues the jobs (already validated) on the connection, inside whatever transaction is
// open there. With unique keys it may take more than one statement (see the .cpp), so a
// caller that wants all-or-nothing runs it inside a transaction.
Result<std::vector<Enqueued>> enqueue_jobs(Connection& connection, const Sql& statements,
                                           std::span<const NewJob> jobs);

// True when any job has a unique key: only then can enqueue_jobs need a second statement.
bool any_unique_key(std::span<const NewJob> jobs);

// A row selected with the job columns of sql/statements.sql, in their order.
Job read_job(const Rows& rows, int row);

// What the lease saw (the columns after each leased job's), into report; rows not empty.
void read_lease_report(const Rows& rows, LeaseReport& report);

}  // namespace readpast::detail::pg
