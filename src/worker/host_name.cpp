#include "worker/host_name.hpp"

#include <unistd.h>

namespace readpast::worker {

std::string host_name() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

}  // namespace readpast::worker
