// server/listen_address.hpp — where `readpast serve` listens: "HOST:PORT", "[IPv6]:PORT" or
// ":PORT", and whether that address is reachable from this machine only.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <string>
#include <string_view>

#include "readpast/error.hpp"

namespace readpast::server {

struct ListenAddress {
  std::string host;  // an IP address or a name, without brackets; never empty
  int port = 0;      // 0 to 65535; 0 lets the system choose (tests)

  // "127.0.0.1:8080", "[::1]:8080"
  std::string to_string() const;
};

inline constexpr std::string_view kDefaultListen = "127.0.0.1:8080";

// Parses "HOST:PORT" or "[IPV6]:PORT"; kInvalidArgument when it does not parse.
Result<ListenAddress> parse_listen_address(std::string_view text);

// True for the loopback addresses (127.0.0.0/8, ::1) and the name "localhost": addresses
// that other machines cannot reach. Anything else (0.0.0.0, a LAN address, a host name)
// may be reachable from elsewhere.
bool is_loopback_host(std::string_view host) noexcept;

}  // namespace readpast::server
