#include "engines/open_engine.hpp"

#include "engines/sqlite/sqlite_engine.hpp"

namespace readpast::detail {

Result<std::unique_ptr<Engine>> open_engine(const DatabaseUrl& url, const QueueOptions& options) {
  switch (url.kind) {
    case EngineKind::kSqlite:
      return open_sqlite_engine(url, options);
    case EngineKind::kPostgres:
      // Replaced by open_postgres_engine once src/engines/postgres/ lands.
      return fail_with(Error::invalid_argument("bad URL '" + url.redacted +
                                               "': the PostgreSQL engine is not built yet"));
  }
  return fail_with(Error::internal("unknown engine kind"));
}

}  // namespace readpast::detail
