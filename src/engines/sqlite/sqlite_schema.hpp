// engines/sqlite/sqlite_schema.hpp — the SQLite schema as numbered migrations, the files of
// sql/migrations/ (embedded by cmake/EmbedSql.cmake).
//
// Invariant: migrations are append-only (core/schema_policy.hpp, which decides what runs and
// what a newer or missing schema says). readpast_schema_version holds one row per applied
// migration.
// docs/schema.md documents the result; its version must match kSchemaVersion.
#pragma once

#include "engines/sqlite/sqlite_connection.hpp"
#include "engines/sqlite/sqlite_statements.hpp"

namespace readpast::detail::sqlite {

inline constexpr int kSchemaVersion = sql::migration_count;

// Applies the missing migrations up to `target` in one IMMEDIATE transaction (so
// concurrent inits serialise); returns the version in force. kSchema when the file is
// newer than this build. Tests pass an older target to build a database as an earlier
// release left it. REQUIRES: 1 <= target <= kSchemaVersion.
Result<int> migrate(Connection& connection, int target = kSchemaVersion);

// kSchema when the schema is missing or newer than this build; the version otherwise.
Result<int> schema_version(Connection& connection);

}  // namespace readpast::detail::sqlite
