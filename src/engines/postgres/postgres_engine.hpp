// engines/postgres/postgres_engine.hpp — the engine for many worker hosts sharing one
// PostgreSQL server.
//
// Workers never block each other: the lease is one statement that locks the rows it takes
// with FOR UPDATE SKIP LOCKED; every settling statement is fenced by the lease token. Idle
// workers wake on LISTEN/NOTIFY. See docs/postgres.md.
//
// URL: postgresql://... or libpq keywords; readpast's own parameter `schema` (default
// "readpast") names the PostgreSQL schema that holds the tables and functions.
#pragma once

#include <memory>

#include "core/url.hpp"
#include "engines/engine_registry.hpp"

namespace readpast::detail {

// Connects once before returning, so that a wrong URL, a wrong password or a server that
// is down fails here (kUnavailable / kInvalidArgument) with a message free of passwords.
Result<std::unique_ptr<Engine>> open_postgres_engine(const DatabaseUrl& url,
                                                     const QueueOptions& options);

}  // namespace readpast::detail
