#include "cli/console.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include "worker/unique_fd.hpp"

namespace readpast::cli {
namespace {

constexpr std::string_view kEraseLine = "\r\033[K";

void write_fd(int fd, std::string_view bytes) {
  // Output that cannot be written (a closed pipe: EPIPE) is dropped; the work goes on.
  (void)worker::write_all(fd, bytes.data(), bytes.size());
}

std::size_t terminal_columns() {
  winsize size{};
  if (::ioctl(2, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

}  // namespace

Console::Console() : stdout_is_terminal_(::isatty(1) == 1), stderr_is_terminal_(::isatty(2) == 1) {}

Console::~Console() {
  clear_status();
}

void Console::erase_status_locked() {
  if (!status_drawn_) return;
  write_fd(2, kEraseLine);
  status_drawn_ = false;
}

void Console::draw_status_locked() {
  if (!status_enabled_ || status_.empty()) return;
  // Mid-line output would be erased with the line: wait for its newline.
  if (!stderr_at_line_start_ || (stdout_is_terminal_ && !stdout_at_line_start_)) return;
  std::string line = status_;
  std::size_t columns = terminal_columns();
  if (line.size() >= columns) line.resize(columns - 1);
  std::string text(kEraseLine.substr(0, 1));
  text += line;
  text += kEraseLine.substr(1);
  write_fd(2, text);
  status_drawn_ = true;
}

void Console::write_stdout(std::string_view bytes) {
  if (bytes.empty()) return;
  std::lock_guard lock(mu_);
  bool redraw = status_drawn_ && stdout_is_terminal_;
  if (redraw) erase_status_locked();
  write_fd(1, bytes);
  stdout_at_line_start_ = bytes.back() == '\n';
  if (redraw) draw_status_locked();
}

void Console::write_stderr(std::string_view bytes) {
  if (bytes.empty()) return;
  std::lock_guard lock(mu_);
  bool redraw = status_drawn_;
  erase_status_locked();
  write_fd(2, bytes);
  stderr_at_line_start_ = bytes.back() == '\n';
  if (redraw) draw_status_locked();
}

void Console::enable_status() {
  std::lock_guard lock(mu_);
  status_enabled_ = stderr_is_terminal_;
}

void Console::show_status(std::string line) {
  std::lock_guard lock(mu_);
  if (!status_enabled_) return;
  status_ = std::move(line);
  erase_status_locked();
  draw_status_locked();
}

void Console::clear_status() {
  std::lock_guard lock(mu_);
  erase_status_locked();
  status_.clear();
}

}  // namespace readpast::cli
