#include "support/small_tmpfs.hpp"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace readpast::test {

SmallTmpfs::SmallTmpfs(std::string options) : options_(std::move(options)) {
  if (::geteuid() != 0) {
    why_not_ = "mounting a tmpfs needs root";
  } else if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                     options_.c_str()) != 0) {
    why_not_ = std::string("cannot mount a tmpfs: ") + std::strerror(errno);
  }
}

SmallTmpfs::~SmallTmpfs() {
  if (why_not_.empty()) ::umount2(dir_.path().c_str(), MNT_DETACH);
}

}  // namespace readpast::test
