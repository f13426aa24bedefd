// A small TCP proxy for network fault tests: listens on 127.0.0.1 (a free port), forwards
// every connection to a target port on 127.0.0.1, and does to the traffic what the test
// says:
//   kPass       forward both ways
//   kDelay      forward each chunk `delay` after it arrived (both ways)
//   kBlackhole  go silent: nothing is forwarded, no new connection is answered, and no
//               connection is closed — no FIN, no RST. When the kernel can drop packets
//               (kernel_blackhole_available()), the proxy's port is also dropped by a
//               netfilter rule, so that the peers' TCP sees its segments unacknowledged
//               (what a pulled cable or a dead host looks like) rather than a peer process
//               that has merely stopped answering.
//   reset()     closes every connection with an RST (SO_LINGER 0), both sides; new
//               connections are forwarded again as the mode says
// Loopback only: it never listens on or connects to anything but 127.0.0.1.
//
// Kernel drops need root and a network namespace of the test's own (the rule only ever
// matches this proxy's port, but a namespace keeps a crashed test from leaving it behind on
// the host): see enter_private_network_namespace().
//
// Thread-safety: the control methods may be called from any thread; one thread of its own
// moves the bytes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace readpast::test {

class TcpProxy {
 public:
  enum class Mode { kPass, kDelay, kBlackhole };

  // Throws std::system_error when it cannot listen.
  explicit TcpProxy(int target_port);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const noexcept { return port_; }

  void pass();
  void delay(std::chrono::milliseconds delay);
  // Throws std::runtime_error when a kernel drop was asked for and could not be installed.
  void blackhole(bool kernel_drop);
  void reset();
  Mode mode() const;

  // Connections forwarded so far, and open now.
  std::int64_t accepted() const noexcept { return accepted_.load(); }
  std::int64_t open_connections() const noexcept { return open_.load(); }

 private:
  struct Impl;
  void run();
  void set_kernel_drop(bool on);

  int port_ = 0;
  std::unique_ptr<Impl> impl_;
  std::atomic<std::int64_t> accepted_{0};
  std::atomic<std::int64_t> open_{0};
  bool kernel_drop_ = false;  // guarded by the control mutex in Impl
  std::thread thread_;
};

// Moves this thread (call it first thing in main, before any other thread exists, so that
// every thread and child process follows) into a new network namespace with its loopback
// up. False, with the reason in *why, when that is not allowed (not root, no
// CAP_SYS_ADMIN, no namespaces).
bool enter_private_network_namespace(std::string* why);
// True once enter_private_network_namespace() succeeded and `nft` can add rules in it.
bool kernel_blackhole_available(std::string* why = nullptr);

}  // namespace readpast::test
