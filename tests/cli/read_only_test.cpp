// A SQLite database that cannot be written — on a read-only file system (a tmpfs remounted
// read-only: works as root, where file modes do not stop anyone), or (as another user) a
// read-only file or directory: the commands that only read work, and the others fail with one
// line that names the file and says why, changing nothing.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"
#include "support/small_tmpfs.hpp"

namespace readpast::test {
namespace {

class ReadOnlyDatabaseTest : public ::testing::Test {
 protected:
  // A database with one available job, made at `path`.
  void make_database(const std::string& path) {
    db_ = "sqlite:" + path;
    ASSERT_EQ(rp({"init"}).exit_code, 0);
    auto enqueued = rp({"enqueue", "q", "x"});
    ASSERT_EQ(enqueued.exit_code, 0) << enqueued.err;
    id_ = enqueued.out.substr(0, enqueued.out.find('\n'));
  }

  RunResult rp(std::vector<std::string> args) {
    args.insert(args.begin(), {"--db", db_});
    return run_readpast(scratch_.path(), args);
  }

  // stats, list, show and metrics read the database; each says it has the job.
  void expect_reads_work() {
    auto stats = rp({"stats", "--json"});
    ASSERT_EQ(stats.exit_code, 0) << stats.err;
    EXPECT_EQ(nlohmann::json::parse(stats.out)["queues"]["q"]["available"], 1);
    EXPECT_EQ(rp({"stats"}).exit_code, 0);
    auto list = rp({"list", "q", "--json"});
    ASSERT_EQ(list.exit_code, 0) << list.err;
    EXPECT_EQ(nlohmann::json::parse(list.out).size(), 1u);
    auto show = rp({"show", id_, "--json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    EXPECT_EQ(nlohmann::json::parse(show.out)["state"], "available");
    auto metrics = rp({"metrics"});
    ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
    EXPECT_NE(metrics.out.find("readpast_jobs{queue=\"q\",state=\"available\"} 1"),
              std::string::npos);
  }

  // Commands that write: exit 1, one line naming the file and `why`.
  void expect_writes_refused(const std::string& path, const std::string& why) {
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"enqueue", "q", "y"},
                                               {"cancel", id_},
                                               {"purge", "q", "--state", "dead"},
                                               {"work", "q", "--exec", "true", "--drain"}}) {
      auto r = rp(args);
      EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
      EXPECT_TRUE(is_one_line_reason(r.err)) << args[0];
      EXPECT_NE(r.err.find("'" + path + "'"), std::string::npos) << args[0] << ": " << r.err;
      EXPECT_NE(r.err.find(why), std::string::npos) << args[0] << ": " << r.err;
    }
  }

  TempDir scratch_;  // the commands' working directory: always writable
  std::string db_;
  std::string id_;
};

TEST_F(ReadOnlyDatabaseTest, OnAReadOnlyFileSystemReadsWorkAndWritesSayWhy) {
  SmallTmpfs mount_point("size=8m,mode=0755");
  if (!mount_point.why_not().empty()) {
    GTEST_SKIP() << mount_point.why_not() << " (the other tests here do not)";
  }
  const std::string path = mount_point.file("jobs.db");
  make_database(path);
  ASSERT_EQ(::mount("tmpfs", mount_point.path().c_str(), "tmpfs",
                    MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, mount_point.options().c_str()),
            0)
      << std::strerror(errno);
  ASSERT_FALSE(std::filesystem::exists(path + "-shm")) << "the database was left open";
  expect_reads_work();
  expect_writes_refused(path, "the file system is mounted read-only");
  // A new database there: the same line.
  const std::string other = mount_point.file("new.db");
  auto init = run_readpast(scratch_.path(), {"--db", "sqlite:" + other, "init"});
  EXPECT_EQ(init.exit_code, 1) << init.err;
  EXPECT_EQ(init.err, "readpast: cannot write database file '" + other +
                          "': the file system is mounted read-only\n");
}

TEST_F(ReadOnlyDatabaseTest, InAReadOnlyDirectoryReadsWorkAndWritesSayWhy) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes whatever the modes say (see the test above)";
  TempDir dir;
  const std::string path = dir.file("jobs.db");
  make_database(path);
  ASSERT_EQ(::chmod(dir.path().c_str(), 0555), 0);
  expect_reads_work();
  expect_writes_refused(path,
                        "its directory " + dir.path().string() + " is not writable by this user");
  const std::string other = dir.file("new.db");
  auto init = run_readpast(scratch_.path(), {"--db", "sqlite:" + other, "init"});
  EXPECT_EQ(init.exit_code, 1) << init.err;
  EXPECT_NE(init.err.find("cannot write database file '" + other + "': its directory"),
            std::string::npos)
      << init.err;
  ::chmod(dir.path().c_str(), 0755);  // so that it can be removed
}

TEST_F(ReadOnlyDatabaseTest, AReadOnlyFileIsReadAndWritesSayWhy) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes whatever the modes say (see the test above)";
  TempDir dir;
  const std::string path = dir.file("jobs.db");
  make_database(path);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  expect_reads_work();
  expect_writes_refused(path, "the file is not writable by this user");
}

}  // namespace
}  // namespace readpast::test
