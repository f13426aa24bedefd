#include "engines/open_engine.hpp"

#include "engines/postgres/postgres_engine.hpp"
#include "engines/sqlite/sqlite_engine.hpp"

namespace readpast::detail {

Result<std::unique_ptr<Engine>> open_engine(const DatabaseUrl& url, const QueueOptions& options) {
  switch (url.kind) {
    case EngineKind::kSqlite:
      return open_sqlite_engine(url, options);
    case EngineKind::kPostgres:
      return open_postgres_engine(url, options);
  }
  return fail_with(Error::internal("unknown engine kind"));
}

}  // namespace readpast::detail
