// Hostile input through the real command line, on every engine (what the conformance suite
// and tests/cli do not cover already — see docs/reliability.md for the whole list):
//   - queue names with quotes, ';', '--', ']', 10,000 bytes, empty: refused (exit 2, one
//     line), nothing written;
//   - payloads one byte over the limit and of 1 GiB, on stdin and as --lines: refused
//     before the database with bounded memory; through the API too;
//   - payloads with NUL bytes, invalid UTF-8, "$(id)", ";", "--opt" and newlines: stored
//     and handed to `work --exec` byte for byte, nothing interpreted.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "chaos.hpp"
#include "support/engines.hpp"

namespace readpast::test {
namespace {

using namespace std::string_literals;

class HostileInputTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    url_ = engine_named(GetParam()).fresh_url();
    queue_.emplace(open_queue(url_));
  }
  CliResult rp(std::vector<std::string> args, const std::string& stdin_path = "") {
    args.insert(args.begin(), {"--db", url_});
    return run_cli(scratch_, args, {}, std::chrono::seconds(120), stdin_path);
  }
  std::string file_with(const std::string& name, const std::string& bytes) {
    const std::string path = scratch_.file(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // A file of `size` zero bytes that takes no disk space (sparse).
  std::string sparse_file(const std::string& name, off_t size) {
    const std::string path = scratch_.file(name);
    std::ofstream(path, std::ios::binary).close();
    std::filesystem::resize_file(path, static_cast<std::uintmax_t>(size));
    return path;
  }
  std::int64_t jobs_in_database() {
    ListRequest all;
    all.limit = 10000;
    auto rows = queue_->list(all);
    EXPECT_TRUE(rows) << rows.error().message;
    return rows ? static_cast<std::int64_t>(rows->size()) : -1;
  }
  static void expect_one_line(const CliResult& r, int exit_code, const std::string& what) {
    EXPECT_EQ(r.exit_code, exit_code) << what << ": " << r.how_it_ended << " " << r.err;
    EXPECT_TRUE(r.err.starts_with("readpast: ")) << what << ": " << r.err.substr(0, 300);
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << what << ": not one line";
    EXPECT_LT(r.err.size(), 400u) << what << ": the reason echoes too much";
  }

  TempDir scratch_;
  std::string url_;
  std::optional<Queue> queue_;
};

TEST_P(HostileInputTest, HostileQueueNamesAreRefusedAndChangeNothing) {
  const std::vector<std::string> names = {
      "it's",         "\"q\"", "q;DROP TABLE readpast_jobs", "--",   "q]",
      "[q",           "",      std::string(10000, 'q'),      "q\nq", "-q",
      "q' OR '1'='1", "$(id)"};
  for (const auto& name : names) {
    const std::string what =
        "queue name '" + name.substr(0, 30) + "' (" + std::to_string(name.size()) + " bytes)";
    // After "--", so that a name like "--" or "-q" is a name, not an option.
    expect_one_line(rp({"enqueue", "--", name, "x"}), 2, what + " enqueue");
    expect_one_line(rp({"work", "--exec", "true", "--drain", "--", name}), 2, what + " work");
    expect_one_line(rp({"list", "--", name}), 2, what + " list");
    expect_one_line(rp({"purge", "--state", "dead", "--", name}), 2, what + " purge");
  }
  EXPECT_EQ(jobs_in_database(), 0);
}

TEST_P(HostileInputTest, OversizedPayloadsAreRefusedBeforeTheDatabaseWithBoundedMemory) {
  // One byte over a 1 KiB limit: refused; at the limit: stored.
  const std::string at_limit = file_with("at", std::string(1024, 'a'));
  const std::string over = file_with("over", std::string(1025, 'o'));
  expect_one_line(rp({"--max-payload", "1KiB", "enqueue", "q", "-"}, over), 1, "1 KiB + 1");
  const CliResult fits = rp({"--max-payload", "1KiB", "enqueue", "q", "-"}, at_limit);
  EXPECT_EQ(fits.exit_code, 0) << fits.err;

  // 1 GiB on stdin, as one payload and as one line, with the default limit (16 MiB): the
  // command stops reading at the limit, so it never holds the gigabyte.
  const std::string gigabyte = sparse_file("gigabyte", off_t{1} << 30);
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"enqueue", "q", "-"}, {"enqueue", "q", "--lines"}}) {
    const CliResult r = rp(args, gigabyte);
    expect_one_line(r, 1, "1 GiB: " + args.back());
    EXPECT_NE(r.err.find("limit"), std::string::npos) << r.err;
    std::cout << "[ hostile  ] 1 GiB to `readpast " << args[0] << " " << args.back() << "`: exit "
              << r.exit_code << " after "
              << std::chrono::duration_cast<std::chrono::milliseconds>(r.wall).count()
              << " ms, peak memory " << r.max_rss_kib / 1024 << " MiB\n";
    EXPECT_LT(r.max_rss_kib, 200 * 1024) << "held far more than the 16 MiB limit";
  }
  EXPECT_EQ(jobs_in_database(), 1) << "only the payload at the limit";

  EXPECT_EQ(jobs_in_database(), 1);
}

TEST_P(HostileInputTest, PayloadsAreStoredAndHandedToCommandsByteForByteUninterpreted) {
  const std::string pwned = scratch_.file("pwned");
  const std::vector<std::string> payloads = {
      "$(touch " + pwned + ")",
      "`touch " + pwned + "`",
      "; touch " + pwned + "; echo",
      "--opt",
      "--exec=touch " + pwned,
      "-",
      "line one\nline two\n\n",
      "nul\0inside\0"s,
      "\0"s,
      "invalid \xff\xfe utf-8 \xc3"s,
      "\xc0\xaf overlong slash",
      "it's \"quoted\" \\ backslashed",
      "\r\n\t\x1b[31mred\x1b[0m",
  };
  std::vector<JobId> ids;
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    const CliResult r =
        rp({"enqueue", "bytes", "-"}, file_with("p" + std::to_string(i), payloads[i]));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ids.push_back(std::stoll(r.out));
  }
  // --lines: NUL and invalid UTF-8 inside lines survive; each line is one payload.
  const std::string lines = "a\0b\n\xff\xfe\n$(id)\n--opt\n;\n"s;
  const CliResult by_lines = rp({"enqueue", "lines", "--lines"}, file_with("lines", lines));
  ASSERT_EQ(by_lines.exit_code, 0) << by_lines.err;

  for (std::size_t i = 0; i < payloads.size(); ++i) {
    auto job = queue_->get(ids[i]);
    ASSERT_TRUE(job) << job.error().message;
    EXPECT_EQ(job->payload, payloads[i]) << "stored payload " << i;
  }
  const std::string out = scratch_.file("out.");
  for (const std::string& queue : {"bytes"s, "lines"s}) {
    const CliResult r = rp(
        {"work", queue, "--exec", "cat > " + out + "$READPAST_JOB_ID", "--drain", "--no-progress"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_EQ(read(out + std::to_string(ids[i])), payloads[i]) << "payload " << i;
  }
  ListRequest request;
  request.queue = "lines";
  auto line_jobs = queue_->list(request);
  ASSERT_TRUE(line_jobs);
  std::vector<std::string> got;
  for (const auto& job : *line_jobs) got.push_back(read(out + std::to_string(job.id)));
  EXPECT_EQ(got, (std::vector<std::string>{"a\0b"s, "\xff\xfe"s, "$(id)", "--opt", ";"}));
  EXPECT_FALSE(std::filesystem::exists(pwned)) << "a payload was executed";
}

// Through the API: refused without a copy of the gigabyte. (Last: the gigabyte this
// process then held would show in the peak memory of the commands it starts afterwards.)
TEST_P(HostileInputTest, AGigabytePayloadIsRefusedByTheApiWithoutACopy) {
  NewJob job;
  job.queue = "q";
  job.payload.assign(std::size_t{1} << 30, 'g');
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const auto t0 = std::chrono::steady_clock::now();
  auto single = queue_->enqueue(job);
  std::vector<NewJob> batch(1);
  batch[0].queue = "q";
  batch[0].payload.swap(job.payload);
  auto batched = queue_->enqueue_batch(batch);
  const auto took = std::chrono::steady_clock::now() - t0;
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  ASSERT_FALSE(single);
  EXPECT_EQ(single.error().code, ErrorCode::kInvalidArgument);
  ASSERT_FALSE(batched);
  EXPECT_EQ(batched.error().code, ErrorCode::kInvalidArgument);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "the gigabyte was copied";
  EXPECT_LT(took, 2s);
  EXPECT_EQ(jobs_in_database(), 0);
}

INSTANTIATE_TEST_SUITE_P(Hostile, HostileInputTest, ::testing::ValuesIn(engine_names()),
                         engine_param_name);

}  // namespace
}  // namespace readpast::test
