#include "server/listen_address.hpp"

#include <arpa/inet.h>

#include <charconv>

namespace readpast::server {

std::string ListenAddress::to_string() const {
  bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail_with(Error::invalid_argument("bad listen address '" + std::string(text) +
                                             "': " + std::string(why) +
                                             " (expected HOST:PORT, e.g. 127.0.0.1:8080)"));
  };
  std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr address{};
    if (::inet_pton(AF_INET6, std::string(host).c_str(), &address) != 1) {
      return bad("not an IPv6 address");
    }
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 address goes in brackets");
  }
  if (host.empty()) return bad("no host (use 0.0.0.0 for every address)");
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port < 0 || port > 65535) {
    return bad("port must be a number from 0 to 65535");
  }
  return ListenAddress{std::string(host), port};
}

bool is_loopback_host(std::string_view host) noexcept {
  if (host == "localhost") return true;
  std::string text(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

}  // namespace readpast::server
