#pragma once
// One round of MariaDB's resolve_dependencies (docs/workflows.md "How it works").

#include <cstdint>

#include "engines/mariadb/mariadb_connection.hpp"
#include "readpast/error.hpp"

namespace readpast::detail::mariadb {

// Tells the dependents of up to kResolveJobs finished jobs marked notify, and lets go the
// jobs waiting for groups whose last member finished, meeting or cancelling at most
// kResolveChunk edges in all (core/dependencies.hpp). Runs inside the caller's transaction,
// which holds the 'dependencies' lock row, in a fixed number of statements however many jobs
// it tells (statements.sql, pick_unmet_edges and on). Returns how many jobs, groups and edges
// it went through: 0 when there was nothing to do.
Result<std::int64_t> resolve_round(Connection& c);

}  // namespace readpast::detail::mariadb
