// The --exec runner (worker::ExecHandler) and the small pieces it is built from.
#include "worker/exec_handler.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "readpast/queue.hpp"
#include "support/temp_dir.hpp"
#include "worker/scrubbed_lines.hpp"
#include "worker/tail_buffer.hpp"

namespace readpast::worker {
namespace {

using namespace std::chrono_literals;

Job test_job() {
  Job job;
  job.id = 1;
  job.queue = "q";
  job.attempts = 1;
  return job;
}

TEST(ExecHandlerTest, StopsItsCommandWhenAsked) {
  ExecOptions exec;
  exec.command = "cat > /dev/null; sleep 30";
  exec.kill_wait = 1s;
  std::string seen_stderr;
  exec.stderr_sink = [&](std::string_view bytes) { seen_stderr.append(bytes); };
  ExecHandler handler(exec);
  Job job = test_job();
  job.payload = std::string(1 << 20, 'p');
  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  auto started = std::chrono::steady_clock::now();
  auto outcome = handler(job, stop.get_token());
  stopper.join();
  EXPECT_EQ(outcome.kind(), JobResult::Kind::kFailure);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

TEST(ExecHandlerTest, SurvivesACommandThatDoesNotReadItsStdin) {
  // This test program leaves SIGPIPE at its default action, which would kill it.
  ExecOptions exec;
  exec.command = "exec 0<&-; echo closed stdin >&2; exit 0";
  exec.stderr_sink = [](std::string_view) {};
  ExecHandler handler(exec);
  Job job = test_job();
  job.payload = std::string(8 << 20, 'p');
  std::stop_source stop;
  auto outcome = handler(job, stop.get_token());
  EXPECT_EQ(outcome.kind(), JobResult::Kind::kSuccess) << outcome.error();
}

// Issue 17: a command that prints its environment put the database password into
// last_error and the worker's log.
TEST(ExecHandlerTest, TakesKnownSecretsOutOfStderrAndLastError) {
  ExecOptions exec;
  exec.secrets.add("s3cr3tPW");
  // The password whole, then cut in two by a pause between writes, then cut by the 4 KiB
  // piece of a long line.
  exec.command =
      "echo \"READPAST_DB=postgresql://u:s3cr3tPW@h/db\" >&2; printf 'x s3c' >&2; sleep 0.2; "
      "printf 'r3tPW y\\n' >&2; head -c 4093 /dev/zero | tr '\\0' a >&2; "
      "printf 's3cr3tPW\\n' >&2; exit 1";
  std::mutex mu;
  std::vector<std::string> lines;
  exec.stderr_sink = [&](std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  };
  ExecHandler handler(exec);
  std::stop_source stop;
  auto outcome = handler(test_job(), stop.get_token());
  ASSERT_EQ(outcome.kind(), JobResult::Kind::kFailure);
  EXPECT_EQ(outcome.error().find("s3cr"), std::string::npos) << outcome.error();
  EXPECT_TRUE(outcome.error().ends_with("aaa[redacted]")) << outcome.error();
  std::string all;
  for (const auto& line : lines) all += line;
  EXPECT_EQ(all, "READPAST_DB=postgresql://u:[redacted]@h/db\nx [redacted] y\n" +
                     std::string(4093, 'a') + "[redacted]\n");
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], "READPAST_DB=postgresql://u:[redacted]@h/db\n");  // a line at a time
  EXPECT_EQ(lines[1], "x [redacted] y\n");
}

TEST(ScrubbedLinesTest, PassesOnWholeLinesAndLongOnesInPieces) {
  detail::SecretScrubber secrets;
  secrets.add("s3cr3tPW");
  std::vector<std::string> pieces;
  ScrubbedLines lines(secrets, [&](std::string_view piece) { pieces.emplace_back(piece); });
  lines.append("one\ntw");
  EXPECT_EQ(pieces, std::vector<std::string>{"one\n"});
  lines.append("o\nthree s3c");
  lines.append("r3tPW\n\n");
  EXPECT_EQ(pieces, (std::vector<std::string>{"one\n", "two\n", "three [redacted]\n", "\n"}));
  pieces.clear();
  // A long line is passed on once it reaches 4 KiB, less a possible start of a secret.
  lines.append(std::string(ScrubbedLines::kMaxLineBytes - 3, 'a') + "s3c");
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0], std::string(ScrubbedLines::kMaxLineBytes - 3, 'a'));
  lines.append("r3tPW end");
  lines.finish();
  EXPECT_EQ(pieces.back(), "[redacted] end");
  lines.finish();  // nothing left
  EXPECT_EQ(pieces.size(), 2u);
}

TEST(TailBufferTest, KeepsTheLastBytes) {
  TailBuffer tail(8);
  tail.append("abc");
  EXPECT_EQ(tail.text(), "abc");
  EXPECT_FALSE(tail.truncated());
  tail.append("defghij\n\n");
  EXPECT_TRUE(tail.truncated());
  EXPECT_EQ(tail.bytes(), "efghij\n\n");
  EXPECT_EQ(tail.text(), "...efghij");
  TailBuffer big(4);
  big.append("0123456789");
  EXPECT_EQ(big.bytes(), "6789");
  TailBuffer empty(4);
  empty.append("\n \n");
  EXPECT_EQ(empty.text(), "");
}

}  // namespace
}  // namespace readpast::worker
