#include "worker/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace readpast::worker {

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0) {
    // Linux releases the descriptor even when close() reports EINTR: never retry.
    ::close(fd_);
  }
  fd_ = fd;
}

std::string errno_message(std::string_view what, int err) {
  std::string message(what);
  message += ": ";
  message += std::strerror(err);
  return message;
}

Result<Pipe> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail_with(Error::internal(errno_message("pipe", errno)));
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

Status set_nonblocking(int fd, bool nonblocking) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return fail_with(Error::internal(errno_message("fcntl", errno)));
  flags = nonblocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, flags) != 0) {
    return fail_with(Error::internal(errno_message("fcntl", errno)));
  }
  return {};
}

int write_all(int fd, const char* data, std::size_t size) noexcept {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n > 0) {
      data += n;
      size -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return n < 0 ? errno : EIO;
  }
  return 0;
}

}  // namespace readpast::worker
