// Runs the real `readpast` binary for black-box tests: arguments, stdin bytes and
// environment in; exit code, stdout and stderr out. stdin comes from a file and output
// goes to files, so neither side can block the other whatever the sizes.
//
// Thread-safety: none needed; each test drives its own processes from its own thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace readpast::test {

struct RunResult {
  int exit_code = -1;  // -1 when it did not exit by itself (killed, timed out)
  int signal = 0;      // the signal that ended it, if any
  bool timed_out = false;
  std::string out;
  std::string err;
};

struct RunOptions {
  std::string stdin_bytes;
  std::vector<std::string> env;  // extra "NAME=value" entries
  std::chrono::milliseconds timeout{30'000};
  // When set, the process's stderr is this descriptor (say, a terminal) instead of a
  // file; RunResult::err is then empty.
  int stderr_fd = -1;
};

// Shorthands: options with just stdin bytes, or just more environment.
inline RunOptions input(std::string bytes) {
  RunOptions options;
  options.stdin_bytes = std::move(bytes);
  return options;
}
inline RunOptions environment(std::vector<std::string> env) {
  RunOptions options;
  options.env = std::move(env);
  return options;
}

// The path of the binary under test (a compile definition).
const char* readpast_path();

// A readpast process started in the background (e.g. `work`), killed and reaped if the
// test ends without waiting for it.
class ReadpastProcess {
 public:
  // `scratch` is a directory for the stdin/stdout/stderr files.
  ReadpastProcess(const std::filesystem::path& scratch, const std::vector<std::string>& args,
                  const RunOptions& options = {});
  ~ReadpastProcess();
  ReadpastProcess(const ReadpastProcess&) = delete;
  ReadpastProcess& operator=(const ReadpastProcess&) = delete;

  pid_t pid() const { return pid_; }
  void send_signal(int signal) const;
  // Waits for it to exit; past the timeout, kills it (SIGKILL) and says so.
  RunResult wait(std::chrono::milliseconds timeout);
  // What it wrote to stderr so far (for waiting on a log line).
  std::string err_so_far() const;

 private:
  pid_t pid_ = -1;
  std::filesystem::path out_path_;
  std::filesystem::path err_path_;
};

// What `readpast serve` (started as a ReadpastProcess with --listen 127.0.0.1:0) has logged
// once it says "serving on http://127.0.0.1:PORT", waiting up to 10 s: the port (nullopt when
// that line never came) and its stderr so far.
struct Serving {
  std::optional<int> port;
  std::string log;
};
Serving wait_until_serving(const ReadpastProcess& server);

// Runs readpast to completion.
RunResult run_readpast(const std::filesystem::path& scratch, const std::vector<std::string>& args,
                       const RunOptions& options = {});

// Reads or writes a whole file as bytes.
std::string read_file(const std::filesystem::path& path);
// The lines of a command's output, without their '\n' ("a\nb\n" → {"a", "b"}).
std::vector<std::string> lines_of(const std::string& text);
void write_file(const std::filesystem::path& path, const std::string& bytes);

// Polls until the file exists; false after the timeout.
bool wait_for_file(const std::filesystem::path& path,
                   std::chrono::milliseconds timeout = std::chrono::seconds(10));
// True once the process is gone or a zombie (nobody may reap it in a container); polls up
// to the timeout.
bool wait_until_process_gone(pid_t pid,
                             std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace readpast::test
