#include "support/server_port.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <random>
#include <system_error>

namespace readpast::test {
namespace {

// The first port the kernel hands out to client sockets; 32768 when it cannot be read.
int first_ephemeral_port() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int first = 0;
  if (!(range >> first) || first <= 0) return 32768;
  return first;
}

bool can_bind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  ::close(fd);
  return bound;
}

}  // namespace

int free_server_port() {
  // Below the ephemeral range, above the well-known and most registered services' ports.
  const int high = first_ephemeral_port() - 1;
  const int low = high > 21000 ? 20000 : 1024;
  std::random_device seed;
  std::mt19937 pick(seed());
  std::uniform_int_distribution<int> port(low, high);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int candidate = port(pick);
    if (can_bind(candidate)) return candidate;
  }
  throw std::system_error(EADDRINUSE, std::generic_category(),
                          "no free port below the ephemeral range");
}

}  // namespace readpast::test
