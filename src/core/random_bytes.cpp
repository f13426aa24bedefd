#include "core/random_bytes.hpp"

#include <sys/random.h>

#include <cerrno>
#include <stdexcept>

namespace readpast::detail {

void fill_random(std::span<char> out) {
  std::size_t filled = 0;
  while (filled < out.size()) {
    const ssize_t n = ::getrandom(out.data() + filled, out.size() - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("getrandom failed");  // no entropy source: a broken system
    }
    filled += static_cast<std::size_t>(n);
  }
}

}  // namespace readpast::detail
