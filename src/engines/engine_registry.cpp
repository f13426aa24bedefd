#include "engines/engine_registry.hpp"

namespace readpast::detail {

Result<std::unique_ptr<Engine>> open_engine(const DatabaseUrl& url, const QueueOptions& options) {
  for (const EngineEntry* entry : registered_engines()) {
    if (entry->name == url.engine) return entry->open(url, options);
  }
  return fail_with(Error::invalid_argument("bad URL '" + url.redacted + "': this build has no " +
                                           url.engine + " engine"));
}

}  // namespace readpast::detail
