// Whether a reader holds WAL read lock 0, the database file alone
// (src/engines/sqlite/sqlite_wal_read_lock.hpp): told for a reader in this process and for
// one in another (the sqlite3 shell, as a report or a backup would be), not for a reader that
// began on a WAL with frames in it, and no longer once the reader has ended.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "engines/sqlite/sqlite_wal_read_lock.hpp"
#include "sqlite/raw_db.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;
using detail::sqlite::reader_holds_database_file;

class WalReadLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    writer_.scalar("PRAGMA journal_mode=WAL");
    writer_.scalar("CREATE TABLE t (x BLOB)");
    write();
  }
  void write() { writer_.scalar("INSERT INTO t VALUES (randomblob(3000))"); }
  // Whether the writer, between its transactions, is told that a reader holds the file.
  bool held() { return reader_holds_database_file(writer_.handle()); }
  // Polls held() until it says `expected` or 10 s have passed.
  bool becomes(bool expected) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (held() != expected && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
    }
    return held() == expected;
  }
  std::string path() const { return dir_.file("jobs.db"); }

  TempDir dir_;
  RawDb writer_{path()};
};

TEST_F(WalReadLockTest, NoReaderNoHold) {
  EXPECT_FALSE(held());
}

TEST_F(WalReadLockTest, AReaderThatBeganOnACheckpointedWalHoldsTheDatabaseFile) {
  RawDb reader(path());
  reader.scalar("PRAGMA wal_checkpoint(TRUNCATE)");
  reader.scalar("BEGIN");
  reader.scalar("SELECT count(*) FROM t");
  write();  // the writer's frames do not move the reader off the file
  EXPECT_TRUE(held());
  reader.scalar("COMMIT");
  EXPECT_FALSE(held());
}

// Such a reader holds a later read lock, at which SQLite's own checkpoint stops before it
// sorts: nothing to skip.
TEST_F(WalReadLockTest, AReaderThatBeganOnAWalWithFramesDoesNot) {
  RawDb reader(path());
  reader.scalar("BEGIN");
  reader.scalar("SELECT count(*) FROM t");
  write();
  EXPECT_FALSE(held());
  reader.scalar("COMMIT");
}

TEST_F(WalReadLockTest, AReaderInAnotherProcessIsSeen) {
  RawDb(path()).scalar("PRAGMA wal_checkpoint(TRUNCATE)");
  const std::string shell = "sqlite3 '" + path() + "' >/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> reader(popen(shell.c_str(), "w"), &pclose);
  ASSERT_NE(reader, nullptr);
  std::fputs("BEGIN;\nSELECT count(*) FROM t;\n", reader.get());
  std::fflush(reader.get());
  EXPECT_TRUE(becomes(true)) << "the shell's read transaction was not seen";
  write();
  EXPECT_TRUE(held());
  std::fputs("COMMIT;\n", reader.get());
  std::fflush(reader.get());
  EXPECT_TRUE(becomes(false)) << "the shell's read transaction was still seen after COMMIT";
  reader.reset();
  EXPECT_FALSE(held());
}

}  // namespace
}  // namespace readpast::test
