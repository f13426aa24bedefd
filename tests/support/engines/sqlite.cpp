// The SQLite engine under test: a new file per database in one directory for the whole test
// program.
#include <sqlite3.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>

#include "support/engines.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

std::string path_of(const std::string& url) {
  return url.substr(std::string("sqlite:").size());
}

// A connection of the test's own, closed when destroyed.
struct SqliteFile {
  explicit SqliteFile(const std::string& url) {
    if (sqlite3_open(path_of(url).c_str(), &db) != SQLITE_OK) {
      std::string why = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close(db);
      throw std::runtime_error("sqlite3_open " + url + ": " + why);
    }
  }
  ~SqliteFile() { sqlite3_close(db); }
  SqliteFile(const SqliteFile&) = delete;
  SqliteFile& operator=(const SqliteFile&) = delete;

  void exec(const char* sql) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string(sql) + ": " + sqlite3_errmsg(db));
    }
  }
  sqlite3* db = nullptr;
};

// BEGIN IMMEDIATE takes the file's write lock until ROLLBACK.
std::shared_ptr<void> hold_sqlite_write_lock(const std::string& url) {
  auto database = std::make_shared<SqliteFile>(url);
  database->exec("BEGIN IMMEDIATE");
  return std::shared_ptr<void>(database.get(), [database](void*) mutable {
    sqlite3_exec(database->db, "ROLLBACK", nullptr, nullptr, nullptr);
    database.reset();
  });
}

// Overwrites the jobs table's root page: the file opens and the version table reads, but
// the jobs cannot be read.
void make_sqlite_jobs_unreadable(const std::string& url) {
  std::size_t root = 0;
  std::size_t page_size = 0;
  {
    SqliteFile database(url);
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(database.db,
                           "SELECT rootpage, (SELECT page_size FROM pragma_page_size) "
                           "FROM sqlite_schema WHERE name = 'readpast_jobs'",
                           -1, &statement, nullptr) != SQLITE_OK ||
        sqlite3_step(statement) != SQLITE_ROW) {
      sqlite3_finalize(statement);
      throw std::runtime_error("no readpast_jobs table in " + url);
    }
    root = static_cast<std::size_t>(sqlite3_column_int64(statement, 0));
    page_size = static_cast<std::size_t>(sqlite3_column_int64(statement, 1));
    sqlite3_finalize(statement);
  }
  const std::string path = path_of(url);
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!file) throw std::runtime_error("cannot open " + path);
  file.seekp(static_cast<std::streamoff>((root - 1) * page_size));
  const std::string garbage(page_size, '\x5a');
  file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  if (!file) throw std::runtime_error("cannot overwrite a page of " + path);
}

}  // namespace

EngineUnderTest sqlite_under_test() {
  EngineUnderTest engine;
  engine.name = "sqlite";
  engine.fresh_url = [] {
    // One directory for the whole test program, removed at exit; a new file per call.
    static const auto dir = std::make_unique<TempDir>();
    static std::atomic<int> counter{0};
    return "sqlite:" + dir->file("db-" + std::to_string(counter++) + ".sqlite");
  };
  engine.hold_write_lock = hold_sqlite_write_lock;
  // A round is one write transaction, which waits for the file's write lock: what another
  // session holds is the same either way.
  engine.hold_for_resolver = [](const std::string& url, EngineUnderTest::ResolverHold,
                                std::int64_t) { return hold_sqlite_write_lock(url); };
  engine.make_jobs_unreadable = make_sqlite_jobs_unreadable;
  return engine;
}

}  // namespace readpast::test
