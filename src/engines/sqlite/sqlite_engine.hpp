// engines/sqlite/sqlite_engine.hpp — the embedded default engine.
//
// Many processes and threads share one file: WAL mode, a busy timeout, and every write in
// a short BEGIN IMMEDIATE transaction, so writers queue on SQLite's lock instead of
// failing half-way. Readers never block the writer.
#pragma once

#include <memory>

#include "core/url.hpp"
#include "engines/engine_registry.hpp"

namespace readpast::detail {

Result<std::unique_ptr<Engine>> open_sqlite_engine(const DatabaseUrl& url,
                                                   const QueueOptions& options);

}  // namespace readpast::detail
