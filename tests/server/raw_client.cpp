#include "raw_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>

namespace readpast::test {

RawClient::RawClient(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return;
  }
  fd_ = fd;
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawClient::send(std::string_view bytes) {
  while (!bytes.empty() && fd_ >= 0) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return fd_ >= 0;
}

bool RawClient::readable(std::chrono::milliseconds wait) const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(wait.count())) == 1;
}

std::optional<RawResponse> RawClient::response(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::size_t end = received_.find("\r\n\r\n");
    if (end != std::string::npos) {
      RawResponse r;
      r.head = received_.substr(0, end);
      if (r.head.starts_with("HTTP/1.") && r.head.size() >= 12)
        r.status = std::stoi(r.head.substr(9, 3));
      std::size_t length = 0;
      for (std::string_view name : {"\r\nContent-Length: ", "\r\ncontent-length: "}) {
        std::size_t at = r.head.find(name);
        if (at != std::string::npos) length = std::stoul(r.head.substr(at + name.size()));
      }
      if (received_.size() >= end + 4 + length) {
        r.body = received_.substr(end + 4, length);
        received_.erase(0, end + 4 + length);
        // An interim "100 Continue" is not the response.
        if (r.status != 100) return r;
        continue;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !readable(left)) return std::nullopt;
    char buffer[65536];
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) return std::nullopt;
    received_.append(buffer, static_cast<std::size_t>(n));
  }
}

bool RawClient::closed_within(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !readable(left)) return false;
    char buffer[65536];
    if (::recv(fd_, buffer, sizeof buffer, 0) <= 0) return true;
  }
}

std::optional<RawResponse> raw_exchange(int port, std::string_view request,
                                        std::chrono::milliseconds timeout) {
  RawClient client(port);
  if (!client.connected() || !client.send(request)) return std::nullopt;
  return client.response(timeout);
}

std::int64_t peak_rss_bytes(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) return std::stoll(line.substr(6)) * 1024;  // in kB
  }
  return -1;
}

}  // namespace readpast::test
