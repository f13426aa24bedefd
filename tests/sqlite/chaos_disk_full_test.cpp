// SQLite on a full disk (a 16 MiB tmpfs; root only): every enqueue either commits or
// reports an error — never a false success, never a row for a refused enqueue; leases and
// completions fail the same honest way; a `work --exec` worker says once that the database is
// unavailable, not once per retry; the database passes PRAGMA integrity_check while full and
// after; and it works again once space is freed.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "chaos.hpp"

namespace readpast::test {
namespace {

// "ok", or what PRAGMA integrity_check (or opening) says is wrong.
std::string integrity_check(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return "cannot open: " + why;
  }
  std::string result;
  auto collect = [](void* out, int, char** values, char**) {
    auto* text = static_cast<std::string*>(out);
    if (!text->empty()) *text += "; ";
    *text += values[0] ? values[0] : "NULL";
    return 0;
  };
  char* error = nullptr;
  if (sqlite3_exec(db, "PRAGMA integrity_check", collect, &result, &error) != SQLITE_OK) {
    result = std::string("integrity_check failed: ") + (error ? error : "?");
    sqlite3_free(error);
  }
  sqlite3_close(db);
  return result;
}

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
    if (::mount("tmpfs", mount_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                "size=16m,mode=0755") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs: " << std::strerror(errno);
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) ::umount2(mount_.path().c_str(), MNT_DETACH);
  }
  std::string on_disk(const std::string& name) const { return mount_.file(name); }

  TempDir mount_;    // the tmpfs is mounted here
  TempDir scratch_;  // histories and CLI output: not on the full disk
  bool mounted_ = false;
};

TEST_F(DiskFullTest, ErrorsAreHonestIntegrityHoldsAndSpaceFreedMakesItWorkAgain) {
  // Room to free later.
  {
    std::ofstream filler(on_disk("filler"), std::ios::binary);
    filler << std::string(4 * 1024 * 1024, 'f');
  }
  const std::string path = on_disk("jobs.db");
  const std::string url = "sqlite:" + path;
  Queue queue = open_queue(url);
  HistoryWriter history(scratch_.file("test.jsonl"));
  const std::string pad(4 * 1024, 'x');
  // Jobs for the worker below, enqueued while there is room: its leases will want to write.
  for (int i = 0; i < 5; ++i) {
    NewJob job;
    job.queue = "side";
    ASSERT_TRUE(queue.enqueue(job));
  }

  std::map<JobId, std::string> acknowledged;
  int refused = 0;
  std::string first_error;
  auto enqueue = [&](const std::string& key) {
    NewJob job;
    job.queue = "full";
    job.payload = key + ":" + pad;
    EnqueueEvent e;
    e.payload = job.payload;
    e.process = "test";
    e.t_start = wall_now();
    auto done = queue.enqueue(job);
    e.t = wall_now();
    if (done) {
      e.job = done->id;
      e.accepted = true;
      acknowledged[done->id] = job.payload;
    } else {
      // SQLite rolls back a transaction that hit SQLITE_FULL: an error is definite.
      e.error = std::string(to_string(done.error().code)) + ": " + done.error().message;
      if (first_error.empty()) first_error = e.error;
      ++refused;
    }
    history.record(e);
    return done.has_value();
  };

  // Fill the disk, then keep trying: every answer must be the truth.
  int consecutive_failures = 0;
  for (int i = 0; i < 20000 && consecutive_failures < 20; ++i) {
    consecutive_failures = enqueue("job-" + std::to_string(i)) ? 0 : consecutive_failures + 1;
  }
  ASSERT_GE(consecutive_failures, 20) << "the disk never filled";
  std::cout << "[ diskfull ] " << acknowledged.size()
            << " enqueues acknowledged, then: " << first_error << "\n";
  EXPECT_NE(first_error.find("full"), std::string::npos) << first_error;

  // A batch is refused whole; the command line says so in one line with exit 1.
  {
    std::vector<NewJob> batch;
    for (int i = 0; i < 5; ++i) {
      NewJob job;
      job.queue = "full";
      job.payload = "batch-" + std::to_string(i) + ":" + pad + pad + pad + pad;
      batch.push_back(job);
    }
    auto done = queue.enqueue_batch(batch);
    EXPECT_FALSE(done) << "a batch fit on a full disk";
    for (const auto& job : batch) {
      EnqueueEvent e;
      e.payload = job.payload;
      e.process = "test";
      e.accepted = done.has_value();
      if (!done) e.error = done.error().message;
      e.t_start = e.t = wall_now();
      if (done) e.job = (*done)[&job - batch.data()].id;
      history.record(e);
    }
    const std::string input = scratch_.file("cli-payload");
    std::ofstream(input, std::ios::binary) << "cli:" << pad;
    ChildProcess::Options options;
    options.stdin_path = input;
    options.out_path = scratch_.file("cli.out");
    options.err_path = scratch_.file("cli.err");
    ChildProcess cli("enqueue", {readpast_path(), "--db", url, "enqueue", "full", "-"}, options);
    ASSERT_TRUE(cli.wait_until(std::chrono::steady_clock::now() + 30s));
    EXPECT_EQ(cli.exit_code(), 1) << cli.how_it_ended();
    std::ifstream err(scratch_.file("cli.err"));
    std::string line;
    std::getline(err, line);
    std::cout << "[ diskfull ] readpast enqueue: " << line << "\n";
    EXPECT_TRUE(line.starts_with("readpast: ")) << line;
    EnqueueEvent e;
    e.payload = "cli:" + pad;
    e.process = "cli";
    e.error = line;
    e.t_start = e.t = wall_now();
    history.record(e);
  }

  // Leases and completions on the full disk: whatever they answer must hold.
  std::string last_lease_error;
  auto drain_some = [&](int rounds) {
    int completed = 0;
    for (int round = 0; round < rounds; ++round) {
      LeaseRequest request;
      request.queue = "full";
      request.worker_id = "w";
      request.max_jobs = 100;
      LeaseEvent lease;
      lease.t_lease_start = wall_now();
      auto jobs = queue.lease(request);
      lease.t_lease_end = wall_now();
      if (!jobs) {  // a lease that failed on SQLite committed nothing
        last_lease_error = jobs.error().message;
        continue;
      }
      if (jobs->empty()) break;
      for (const auto& job : *jobs) {
        lease.job = job.id;
        lease.token = job.lease_token->hex();
        lease.process = "test";
        lease.worker = "test/w";
        lease.attempt = job.attempts;
        lease.lease_expires_at = *job.lease_expires_at;
        history.record(lease);
        CompleteEvent c;
        c.job = job.id;
        c.token = lease.token;
        c.process = "test";
        c.worker = "test/w";
        c.t_start = wall_now();
        auto done = queue.complete(job.id, *job.lease_token);
        c.t = wall_now();
        c.accepted = done.has_value();
        if (!done) {
          c.error = done.error().message;
          // Not completed: give it back so that the drain below finds it at once.
          (void)queue.release(job.id, *job.lease_token);
        }
        completed += c.accepted ? 1 : 0;
        history.record(c);
      }
    }
    return completed;
  };
  const int completed_while_full = drain_some(3);
  EXPECT_EQ(integrity_check(path), "ok") << "while full";

  // A worker on the full disk: its leases fail for as long as the disk stays full, while its
  // reads (waiting for jobs, looking for due schedules) work. It says so once, not once per
  // retry (it used to say "unavailable" and "available again" about once a second).
  {
    ChildProcess::Options options;
    options.out_path = scratch_.file("work.out");
    options.err_path = scratch_.file("work.err");
    ChildProcess work("work",
                      {readpast_path(), "--db", url, "work", "side", "--exec", "cat >/dev/null",
                       "--grace", "1s", "--no-progress"},
                      options);
    std::this_thread::sleep_for(6s);
    work.signal(SIGTERM);
    ASSERT_TRUE(work.wait_until(std::chrono::steady_clock::now() + 30s));
    EXPECT_TRUE(work.exited_cleanly()) << work.how_it_ended();
    std::ifstream err(scratch_.file("work.err"));
    std::string line, log;
    int unavailable = 0, available_again = 0;
    while (std::getline(err, line)) {
      log += line + "\n";
      if (line.find("database unavailable") != std::string::npos) ++unavailable;
      if (line.find("database available again") != std::string::npos) ++available_again;
    }
    std::cout << "[ diskfull ] readpast work on the full disk for 6 s: " << unavailable
              << " unavailable, " << available_again << " available again\n";
    EXPECT_EQ(unavailable, 1) << log;
    EXPECT_EQ(available_again, 0) << log;
  }

  // Free the space: everything works again, in this handle and in a new one.
  std::filesystem::remove(on_disk("filler"));
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(enqueue("after-" + std::to_string(i))) << "enqueue after space was freed";
  }
  {
    Queue again = open_queue(url);
    NewJob job;
    job.queue = "full";
    job.payload = "reopened";
    auto done = again.enqueue(job);
    ASSERT_TRUE(done) << done.error().message;
    EnqueueEvent e;
    e.job = done->id;
    e.payload = "reopened";
    e.process = "test";
    e.accepted = true;
    e.t_start = e.t = wall_now();
    history.record(e);
    acknowledged[done->id] = "reopened";
  }
  last_lease_error.clear();
  drain_some(1000);
  EXPECT_EQ(last_lease_error, "") << "after space was freed";
  EXPECT_EQ(integrity_check(path), "ok") << "after space was freed";

  // Every acknowledged job is there, byte for byte, and ran once; nothing refused is.
  ListRequest all;
  all.queue = "full";
  all.limit = 10000;
  auto rows = queue.list(all);
  ASSERT_TRUE(rows) << rows.error().message;
  for (const auto& row : *rows) {
    if (acknowledged.count(row.id)) {
      EXPECT_EQ(row.payload, acknowledged[row.id]) << row.id;
    }
  }
  History h;
  read_history_file(scratch_.file("test.jsonl"), h);
  const CheckReport report = check_history(h, {}, *rows);
  std::cout << "[ history  ] disk full: " << report.summary(10) << "\n";
  record_figures("disk_full", "sqlite", report);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.succeeded, static_cast<std::int64_t>(acknowledged.size()));
  EXPECT_GT(report.enqueues_refused, 20);
  std::cout << "[ diskfull ] " << completed_while_full
            << " completions accepted while the disk was full\n";
}

}  // namespace
}  // namespace readpast::test
