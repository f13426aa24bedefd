// The SQLite engine under test: a new file per database in one directory for the whole test
// program.
#include <atomic>
#include <memory>

#include "support/engines.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {

EngineUnderTest sqlite_under_test() {
  return {"sqlite", [] {
            // One directory for the whole test program, removed at exit; a new file per call.
            static const auto dir = std::make_unique<TempDir>();
            static std::atomic<int> counter{0};
            return "sqlite:" + dir->file("db-" + std::to_string(counter++) + ".sqlite");
          }};
}

}  // namespace readpast::test
