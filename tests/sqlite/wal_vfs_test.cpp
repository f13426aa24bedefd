// The VFS that extends a growing WAL ahead of SQLite's appends
// (src/engines/sqlite/sqlite_wal_vfs.hpp): while a read transaction is held elsewhere the WAL
// file grows in whole chunks of zeros written ahead of the frames, every committed job is
// still there (read back, after a crash-like copy of the files mid-hold, and by
// PRAGMA integrity_check), an extension the disk cannot hold is cut back off so that the
// frames still land, and a WAL that restarts is not extended again.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines/sqlite/sqlite_connection.hpp"
#include "engines/sqlite/sqlite_wal_vfs.hpp"
#include "readpast/readpast.hpp"
#include "sqlite/raw_db.hpp"
#include "support/small_tmpfs.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

namespace sqlite = detail::sqlite;
namespace fs = std::filesystem;

class WalVfsTest : public ::testing::Test {
 protected:
  std::string path() const { return dir_.file("jobs.db"); }
  std::uintmax_t wal_bytes(const std::string& db) const {
    std::error_code ec;
    const auto size = fs::file_size(db + "-wal", ec);
    return ec ? std::uintmax_t{0} : size;
  }
  Queue open_queue() { return open_queue_at(path()); }
  static Queue open_queue_at(const std::string& db) {
    QueueOptions options;
    options.init_schema = true;
    auto queue = Queue::open("sqlite:" + db, options);
    if (!queue) throw std::runtime_error(queue.error().message);
    return std::move(*queue);
  }
  // `n` jobs of 4 KiB enqueued in one batch; returns their ids.
  static std::vector<std::int64_t> enqueue(Queue& queue, int n) {
    std::vector<NewJob> batch(static_cast<std::size_t>(n));
    for (NewJob& job : batch) {
      job.queue = "q";
      job.payload = "\"" + std::string(4096, 'x') + "\"";
    }
    auto enqueued = queue.enqueue_batch(batch);
    if (!enqueued) throw std::runtime_error(enqueued.error().message);
    std::vector<std::int64_t> ids;
    for (const Enqueued& e : *enqueued) ids.push_back(e.id);
    return ids;
  }
  TempDir dir_;
};

TEST_F(WalVfsTest, TheChunkIsHalfTheFileWithinItsBounds) {
  EXPECT_EQ(sqlite::wal_chunk(0), sqlite::kWalMinChunk);
  EXPECT_EQ(sqlite::wal_chunk(std::int64_t{6} << 20), std::int64_t{3} << 20);
  EXPECT_EQ(sqlite::wal_chunk(std::int64_t{1} << 34), sqlite::kWalMaxChunk);
}

// (That readpast's connections open their files through it, the next test shows: only it
// extends a WAL in whole chunks.)
TEST_F(WalVfsTest, ItIsRegisteredBesideTheDefaultVfs) {
  ASSERT_NE(sqlite::wal_vfs_name(), nullptr);
  Queue queue = open_queue();
  sqlite3_vfs* vfs = sqlite3_vfs_find(sqlite::wal_vfs_name());
  ASSERT_NE(vfs, nullptr);
  EXPECT_NE(vfs, sqlite3_vfs_find(nullptr)) << "it must not replace the default VFS";
}

// Held: the WAL only grows, and does so in whole MiB of zeros ahead of the frames.
TEST_F(WalVfsTest, AHeldWalGrowsInWholeChunksAndLosesNoCommittedJob) {
  Queue queue = open_queue();
  std::vector<std::int64_t> ids = enqueue(queue, 10);
  RawDb reader(path());
  reader.scalar("BEGIN");
  reader.scalar("SELECT count(*) FROM sqlite_master");
  const std::string copy = dir_.file("copy.db");
  while (wal_bytes(path()) < (std::uintmax_t{40} << 20)) {
    const auto more = enqueue(queue, 200);
    ids.insert(ids.end(), more.begin(), more.end());
    const auto size = wal_bytes(path());
    ASSERT_EQ(size % static_cast<std::uintmax_t>(sqlite::kWalMinChunk), 0u)
        << "the WAL is " << size << " bytes: not extended ahead in whole chunks";
  }
  // A copy of the files as a crash would leave them: the WAL ends in zeros past the last
  // frame. Recovery must find every committed job and nothing else.
  fs::copy_file(path(), copy);
  fs::copy_file(path() + "-wal", copy + "-wal");
  reader.scalar("COMMIT");
  {
    RawDb recovered(copy);
    EXPECT_EQ(recovered.scalar("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(recovered.scalar("SELECT count(*) FROM readpast_jobs"), std::to_string(ids.size()));
    EXPECT_EQ(recovered.scalar("SELECT max(id) FROM readpast_jobs"), std::to_string(ids.back()));
  }
  RawDb after(path());
  EXPECT_EQ(after.scalar("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(after.scalar("SELECT count(*) FROM readpast_jobs"), std::to_string(ids.size()));
}

// Without a reader, the WAL restarts from its start and stays a few MiB: the extension
// happens at its first growth, not at every restart.
TEST_F(WalVfsTest, AWalThatRestartsIsNotExtendedAgain) {
  Queue queue = open_queue();
  std::uintmax_t largest = 0;
  for (int round = 0; round < 200; ++round) {
    enqueue(queue, 50);
    largest = std::max(largest, wal_bytes(path()));
  }
  EXPECT_LE(largest, std::uintmax_t{16} << 20) << "the WAL grew to " << largest << " bytes";
}

// Once a held reader has ended, the WAL it grew is cut back to journal_size_limit a step at a
// time, one step at the first commit after each restart, instead of in one ftruncate under
// the write lock that every other writer waits for (run 50: 9.4-11.1 s for 37.5 GiB).
TEST_F(WalVfsTest, AWalGrownWhileHeldIsCutBackAStepAtATime) {
  sqlite::Connection::Settings settings;
  settings.path = path();
  settings.create = true;
  settings.synchronous = "NORMAL";
  auto opened = sqlite::Connection::open(settings);
  ASSERT_TRUE(opened);
  sqlite::Connection& writer = **opened;
  ASSERT_TRUE(writer.exec("CREATE TABLE filler (id INTEGER PRIMARY KEY, bytes BLOB)"));
  ASSERT_TRUE(writer.exec("INSERT INTO filler VALUES (1, zeroblob(1))"));
  // 1 MiB of frames a commit, the same pages each time: the database stays small.
  const char* rewrite = "UPDATE filler SET bytes = randomblob(1048576) WHERE id = 1";
  const auto limit = static_cast<std::uintmax_t>(sqlite::Connection::kWalSizeLimitBytes);
  const auto step = static_cast<std::uintmax_t>(sqlite::kWalTruncateStep);
  {
    RawDb reader(path());
    reader.scalar("BEGIN");
    reader.scalar("SELECT count(*) FROM filler");
    while (wal_bytes(path()) < limit + 2 * step + (8u << 20)) ASSERT_TRUE(writer.exec(rewrite));
    reader.scalar("COMMIT");
  }
  const auto grown = wal_bytes(path());
  std::uintmax_t size = grown;
  std::uintmax_t largest_cut = 0;
  int cuts = 0;
  for (int i = 0; i < 200 && size > limit; ++i) {
    ASSERT_TRUE(writer.exec(rewrite));
    const auto now = wal_bytes(path());
    if (now < size) {
      ++cuts;
      largest_cut = std::max(largest_cut, size - now);
    }
    size = now;
  }
  EXPECT_LE(size, limit) << "the WAL stayed at " << size << " bytes after growing to " << grown;
  EXPECT_LE(largest_cut, step) << "one cut took " << largest_cut << " bytes off the WAL";
  EXPECT_GE(cuts, 3);
  EXPECT_EQ(RawDb(path()).scalar("PRAGMA integrity_check"), "ok");
}

// On a small tmpfs (root only): once the disk has less room than a chunk, the extension fails
// and the frames still go into the room that is left, as they would without the VFS.
TEST_F(WalVfsTest, AnExtensionTheDiskCannotHoldLeavesTheFramesTheRoomThatIsLeft) {
  SmallTmpfs small("size=8m,mode=0755");
  if (!small.why_not().empty()) GTEST_SKIP() << small.why_not();
  const std::string db = small.file("jobs.db");
  std::uintmax_t prepared = 0;
  int past_prepared = 0;  // enqueues that committed with the WAL past its last prepared end
  {
    Queue queue = open_queue_at(db);
    enqueue(queue, 5);
    RawDb reader(db);
    reader.scalar("BEGIN");
    reader.scalar("SELECT count(*) FROM sqlite_master");
    // Everything but 512 KiB, less than any chunk, goes to a filler file.
    const std::string filler = small.file("filler");
    {
      std::ofstream out(filler, std::ios::binary);
      const std::string block(64 * 1024, 'f');
      while (out.write(block.data(), static_cast<std::streamsize>(block.size())) && out.flush()) {
      }
    }
    fs::resize_file(filler, fs::file_size(filler) - 512 * 1024);
    prepared = wal_bytes(db);
    for (int i = 0; i < 2000; ++i) {
      std::vector<NewJob> one(1);
      one[0].queue = "q";
      one[0].payload = "\"" + std::string(4096, 'x') + "\"";
      if (!queue.enqueue_batch(one)) break;
      if (wal_bytes(db) > prepared) ++past_prepared;
    }
    reader.scalar("COMMIT");
  }
  EXPECT_GT(past_prepared, 10) << "the WAL's prepared end was " << prepared << " bytes";
  EXPECT_NE(wal_bytes(db) % static_cast<std::uintmax_t>(sqlite::kWalMinChunk), 0u)
      << "no extension failed: the test did not fill the disk";
  RawDb after(db);
  EXPECT_EQ(after.scalar("PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace readpast::test
