// cli/console.hpp — the process's stdout and stderr, shared by log lines, the output of
// running commands and the live progress line.
//
// The progress line lives at the bottom of a terminal: before anything else is written it
// is erased ("\r\e[K"), and it is drawn again only when both streams end at a line start,
// so output and log lines never run into it.
//
// Thread-safety: every member may be called from any thread; writes are serialized.
#pragma once

#include <mutex>
#include <string>
#include <string_view>

namespace readpast::cli {

class Console {
 public:
  Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;
  ~Console();  // erases the progress line

  bool stderr_is_terminal() const noexcept { return stderr_is_terminal_; }
  bool stdout_is_terminal() const noexcept { return stdout_is_terminal_; }

  void write_stdout(std::string_view bytes);
  void write_stderr(std::string_view bytes);

  // Turns the progress line on (only takes effect when stderr is a terminal).
  void enable_status();
  // Replaces the progress line's text and draws it if it can.
  void show_status(std::string line);
  void clear_status();

 private:
  void erase_status_locked();
  void draw_status_locked();

  // Constant after construction.
  bool stdout_is_terminal_ = false;
  bool stderr_is_terminal_ = false;

  std::mutex mu_;
  // Guarded by mu_.
  bool status_enabled_ = false;
  bool status_drawn_ = false;
  std::string status_;
  bool stdout_at_line_start_ = true;
  bool stderr_at_line_start_ = true;
};

}  // namespace readpast::cli
