#include "cli/input.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "cli/arguments.hpp"
#include "worker/unique_fd.hpp"

namespace readpast::cli {
namespace {

constexpr std::size_t kChunk = 64 * 1024;

// Reads what is there into `buffer`; 0 at end of input.
CliResult<std::size_t> read_chunk(std::vector<char>& buffer) {
  for (;;) {
    ssize_t n = ::read(0, buffer.data(), buffer.size());
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR) return fail_cli(failure(worker::errno_message("cannot read stdin", errno)));
  }
}

CliError too_large(std::size_t limit) {
  return failure(
      fmt::format("payload is over the limit of {} (see --max-payload)", format_size(limit)));
}

}  // namespace

CliResult<std::string> read_stdin_payload(std::size_t limit) {
  std::string payload;
  std::vector<char> buffer(kChunk);
  for (;;) {
    auto n = read_chunk(buffer);
    if (!n) return fail_cli(n.error());
    if (*n == 0) return payload;
    if (payload.size() + *n > limit) return fail_cli(too_large(limit));
    payload.append(buffer.data(), *n);
  }
}

CliStatus read_stdin_lines(std::size_t limit,
                           const std::function<CliStatus(std::string&&, std::size_t)>& on_line) {
  std::string line;
  std::size_t line_number = 1;
  std::vector<char> buffer(kChunk);
  auto finish_line = [&]() -> CliStatus {
    CliStatus status;
    if (!line.empty()) status = on_line(std::move(line), line_number);
    line.clear();
    ++line_number;
    return status;
  };
  for (;;) {
    auto n = read_chunk(buffer);
    if (!n) return fail_cli(n.error());
    if (*n == 0) break;
    std::string_view chunk(buffer.data(), *n);
    while (!chunk.empty()) {
      auto newline = chunk.find('\n');
      auto piece = chunk.substr(0, newline);
      if (line.size() + piece.size() > limit) {
        return fail_cli(failure(fmt::format("line {}: {}", line_number, too_large(limit).message)));
      }
      line.append(piece);
      if (newline == std::string_view::npos) break;
      if (auto ok = finish_line(); !ok) return ok;
      chunk.remove_prefix(newline + 1);
    }
  }
  return finish_line();
}

}  // namespace readpast::cli
