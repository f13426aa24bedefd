// The `readpast` command. Everything is in run_cli (cli/app.cpp).
#include <fcntl.h>
#include <unistd.h>

#include "cli/session.hpp"
#include "readpast/allocator.hpp"

namespace {

// Descriptors 0, 1 and 2 are open from here on, even if we were started with one closed:
// otherwise the next file or pipe we open would take that number, and a child would get
// it as its stdin, stdout or stderr.
void ensure_standard_descriptors() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) == -1) {
      int null = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ensure_standard_descriptors();
  // Before any thread starts: `readpast work` leases from SQLite in worker threads (the
  // header says why this matters).
  readpast::keep_freed_memory_for_reuse();
  return readpast::cli::run_cli(argc, argv);
}
