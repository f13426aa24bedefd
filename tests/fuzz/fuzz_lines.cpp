// `readpast enqueue QUEUE --lines`: stdin split at '\n' into payloads. read_stdin_lines
// never crashes, yields exactly the non-empty lines in order, byte for byte (NUL and
// invalid UTF-8 included), and refuses a line over the limit — checked against a plain
// reference split. The first byte of the input picks the limit; the rest is stdin.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t limit = 1 + data[0] % 64;
  const std::string input(reinterpret_cast<const char*>(data + 1), size - 1);

  // stdin from memory.
  static const int memory = ::memfd_create("fuzz-stdin", 0);
  if (::ftruncate(memory, 0) != 0) std::abort();
  if (!input.empty() &&
      ::pwrite(memory, input.data(), input.size(), 0) != static_cast<ssize_t>(input.size())) {
    std::abort();
  }
  if (::lseek(memory, 0, SEEK_SET) != 0 || ::dup2(memory, 0) != 0) std::abort();

  std::vector<std::string> lines;
  auto status = readpast::cli::read_stdin_lines(
      limit, [&](std::string&& line, std::size_t) -> readpast::cli::CliStatus {
        lines.push_back(std::move(line));
        return {};
      });

  // The reference: split at '\n', skip empty lines; the first line over the limit fails.
  std::vector<std::string> expected;
  bool too_long = false;
  std::size_t start = 0;
  while (start <= input.size()) {
    std::size_t end = input.find('\n', start);
    if (end == std::string::npos) end = input.size();
    const std::string line = input.substr(start, end - start);
    if (line.size() > limit) {
      too_long = true;
      break;
    }
    if (!line.empty()) expected.push_back(line);
    start = end + 1;
  }
  if (too_long) {
    if (status || status.error().message.find("limit") == std::string::npos) std::abort();
    // Lines before the long one were handed over already; none after it.
    if (lines.size() > expected.size()) std::abort();
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (lines[i] != expected[i]) std::abort();
    }
  } else {
    if (!status || lines != expected) std::abort();
  }
  return 0;
}
