// worker/unique_fd.hpp — sole ownership of a file descriptor.
//
// Thread-safety: a UniqueFd is a plain value; one object must not be used from two threads
// at once, distinct objects freely.
#pragma once

#include <utility>

#include "readpast/error.hpp"

namespace readpast::worker {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  // Closes the descriptor held, if any, and takes `fd`.
  void reset(int fd = -1) noexcept;
  int release() noexcept { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

// Both ends of a pipe, created with O_CLOEXEC so that no child inherits them by accident.
struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};
Result<Pipe> make_pipe();

// Sets or clears O_NONBLOCK.
Status set_nonblocking(int fd, bool nonblocking = true);

// Writes all of `size` bytes to a blocking or non-blocking descriptor, retrying on EINTR
// and waiting (poll) on EAGAIN. Returns the errno of a failure, 0 on success.
int write_all(int fd, const char* data, std::size_t size) noexcept;

// "what: strerror(err)".
std::string errno_message(std::string_view what, int err);

}  // namespace readpast::worker
