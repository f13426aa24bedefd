// The --exec runner (worker::ExecHandler) and the small pieces it is built from.
#include "worker/exec_handler.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "readpast/queue.hpp"
#include "support/temp_dir.hpp"
#include "worker/tail_buffer.hpp"
#include "worker/utf8.hpp"

namespace readpast::worker {
namespace {

using namespace std::chrono_literals;

TEST(ExecHandlerTest, StopsItsCommandWhenAsked) {
  ExecOptions exec;
  exec.command = "cat > /dev/null; sleep 30";
  exec.kill_wait = 1s;
  std::string seen_stderr;
  exec.stderr_sink = [&](std::string_view bytes) { seen_stderr.append(bytes); };
  ExecHandler handler(exec);
  Job job;
  job.id = 1;
  job.queue = "q";
  job.attempts = 1;
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
  Job job;
  job.id = 1;
  job.queue = "q";
  job.attempts = 1;
  job.payload = std::string(8 << 20, 'p');
  std::stop_source stop;
  auto outcome = handler(job, stop.get_token());
  EXPECT_EQ(outcome.kind(), JobResult::Kind::kSuccess) << outcome.error();
}

TEST(Utf8Test, ValidatesAndSanitizes) {
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_TRUE(is_valid_utf8(std::string("nul\0ok", 6)));
  EXPECT_FALSE(is_valid_utf8("\xff"));
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(is_valid_utf8("cut \xe2\x82"));
  EXPECT_EQ(sanitize_utf8("a\xff"
                          "b"),
            "a\xef\xbf\xbd"
            "b");
  EXPECT_EQ(sanitize_utf8(std::string("a\0b", 3)),
            "a\xe2\x90\x80"
            "b");
  EXPECT_EQ(sanitize_utf8("\x82\xac rest"), " rest");  // a character cut at the start
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
