// A client that speaks HTTP over a plain socket, byte by byte as the test writes it: for
// requests no well-behaved client library would send (odd paths, endless headers, trickled
// bytes, bodies that never end). Loopback only.
//
// Thread-safety: one RawClient per thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace readpast::test {

struct RawResponse {
  int status = 0;
  std::string head;  // the status line and headers
  std::string body;
};

class RawClient {
 public:
  // Connects to 127.0.0.1:port; connected() says whether it worked.
  explicit RawClient(int port);
  ~RawClient();
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return fd_ >= 0; }
  // False once the server has closed or reset the connection.
  bool send(std::string_view bytes);
  // Whether the server has sent something (or closed) within `wait`.
  bool readable(std::chrono::milliseconds wait = std::chrono::milliseconds(0)) const;
  // One response (its head, and a body of Content-Length bytes); nullopt when none
  // arrives within the timeout or the connection closes first.
  std::optional<RawResponse> response(std::chrono::milliseconds timeout);
  // True when the server closes the connection within the timeout (what arrives before is
  // dropped).
  bool closed_within(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::string received_;
};

// One request on a new connection; its response, or nullopt.
std::optional<RawResponse> raw_exchange(int port, std::string_view request,
                                        std::chrono::milliseconds timeout);

// The peak resident memory of a process so far, in bytes (VmHWM in /proc/PID/status).
std::int64_t peak_rss_bytes(int pid);

}  // namespace readpast::test
