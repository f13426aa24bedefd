#include "support/tcp_proxy.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace readpast::test {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return addr;
}

void close_with_reset(int fd) {
  linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::close(fd);
}

// The bytes queued for one side before the proxy stops reading from the other.
constexpr std::size_t kMaxQueued = 1 << 20;

bool g_private_namespace = false;

int run_quietly(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str());
}

}  // namespace

// Parts of TcpProxy::Impl's state, in a named namespace: GCC rejects (-Wsubobject-linkage)
// a member of a class with external linkage whose type is in an anonymous namespace, once
// this file is compiled inside another (CI's unity builds).
namespace tcp_proxy_parts {

struct Chunk {
  std::chrono::steady_clock::time_point due;
  std::string bytes;
};

// One forwarded connection: client <-> target, and the chunks delayed on their way.
struct Pair {
  int client = -1;
  int target = -1;
  std::deque<Chunk> to_target;
  std::deque<Chunk> to_client;
};

}  // namespace tcp_proxy_parts
using tcp_proxy_parts::Chunk;
using tcp_proxy_parts::Pair;

struct TcpProxy::Impl {
  int target_port = 0;
  int listener = -1;
  int wake[2] = {-1, -1};  // a pipe: a byte wakes the loop after a control call
  mutable std::mutex mu;
  Mode mode = Mode::kPass;             // guarded by mu
  std::chrono::milliseconds delay{0};  // guarded by mu
  bool reset_requested = false;        // guarded by mu
  bool stopping = false;               // guarded by mu
  std::vector<Pair> pairs;             // the loop's own
};

TcpProxy::TcpProxy(int target_port) : impl_(std::make_unique<Impl>()) {
  impl_->target_port = target_port;
  impl_->listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl_->listener < 0) throw_errno("socket");
  int one = 1;
  ::setsockopt(impl_->listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = loopback(0);
  if (::bind(impl_->listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throw_errno("bind");
  }
  if (::listen(impl_->listener, 128) != 0) throw_errno("listen");
  socklen_t len = sizeof addr;
  ::getsockname(impl_->listener, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (::pipe2(impl_->wake, O_CLOEXEC | O_NONBLOCK) != 0) throw_errno("pipe");
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  (void)::write(impl_->wake[1], "x", 1);
  thread_.join();
  set_kernel_drop(false);
  for (auto& p : impl_->pairs) {
    ::close(p.client);
    ::close(p.target);
  }
  ::close(impl_->listener);
  ::close(impl_->wake[0]);
  ::close(impl_->wake[1]);
}

void TcpProxy::pass() {
  set_kernel_drop(false);
  {
    std::lock_guard lock(impl_->mu);
    impl_->mode = Mode::kPass;
  }
  (void)::write(impl_->wake[1], "x", 1);
}

void TcpProxy::delay(std::chrono::milliseconds delay) {
  set_kernel_drop(false);
  {
    std::lock_guard lock(impl_->mu);
    impl_->mode = Mode::kDelay;
    impl_->delay = delay;
  }
  (void)::write(impl_->wake[1], "x", 1);
}

void TcpProxy::blackhole(bool kernel_drop) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->mode = Mode::kBlackhole;
  }
  (void)::write(impl_->wake[1], "x", 1);
  if (kernel_drop) set_kernel_drop(true);
}

void TcpProxy::reset() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->reset_requested = true;
  }
  (void)::write(impl_->wake[1], "x", 1);
}

TcpProxy::Mode TcpProxy::mode() const {
  std::lock_guard lock(impl_->mu);
  return impl_->mode;
}

void TcpProxy::set_kernel_drop(bool on) {
  std::lock_guard lock(impl_->mu);
  if (on == kernel_drop_) return;
  const std::string table = "readpast_proxy_" + std::to_string(port_);
  if (on) {
    std::string why;
    if (!kernel_blackhole_available(&why)) {
      throw std::runtime_error("cannot drop packets in the kernel: " + why);
    }
    const std::string port = std::to_string(port_);
    const std::string script = "nft add table inet " + table + " && nft add chain inet " + table +
                               " out '{ type filter hook output priority 0; }' && nft add rule "
                               "inet " +
                               table + " out tcp dport " + port + " drop && nft add rule inet " +
                               table + " out tcp sport " + port + " drop";
    if (run_quietly(script) != 0) throw std::runtime_error("nft failed: " + script);
  } else {
    run_quietly("nft delete table inet " + table);
  }
  kernel_drop_ = on;
}

void TcpProxy::run() {
  Impl& s = *impl_;
  std::vector<char> buffer(64 * 1024);
  while (true) {
    Mode mode;
    std::chrono::milliseconds delay;
    bool reset_now;
    {
      std::lock_guard lock(s.mu);
      if (s.stopping) return;
      mode = s.mode;
      delay = s.delay;
      reset_now = std::exchange(s.reset_requested, false);
    }
    if (reset_now) {
      for (auto& p : s.pairs) {
        close_with_reset(p.client);
        close_with_reset(p.target);
      }
      open_ -= static_cast<std::int64_t>(s.pairs.size());
      s.pairs.clear();
    }
    const bool silent = mode == Mode::kBlackhole;

    // Deliver what is due; find when the next chunk is.
    const auto now = Clock::now();
    int timeout_ms = 200;
    std::vector<std::size_t> dead;
    for (std::size_t i = 0; i < s.pairs.size(); ++i) {
      Pair& p = s.pairs[i];
      // Never blocks: a peer that does not read (or whose packets the kernel drops) must not
      // stall every other connection. What does not fit waits for POLLOUT.
      auto deliver = [&](std::deque<Chunk>& queue, int fd) {
        while (!silent && !queue.empty() && (mode != Mode::kDelay || queue.front().due <= now)) {
          std::string& bytes = queue.front().bytes;
          const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
          if (n < 0) return false;
          if (static_cast<std::size_t>(n) < bytes.size()) {
            bytes.erase(0, static_cast<std::size_t>(n));
            break;
          }
          queue.pop_front();
        }
        if (!queue.empty() && mode == Mode::kDelay) {
          const auto wait =
              std::chrono::duration_cast<std::chrono::milliseconds>(queue.front().due - now)
                  .count();
          timeout_ms = std::max(1, std::min<int>(timeout_ms, static_cast<int>(wait)));
        }
        return true;
      };
      if (!deliver(p.to_target, p.target) || !deliver(p.to_client, p.client)) dead.push_back(i);
    }

    std::vector<pollfd> fds;
    fds.push_back({s.wake[0], POLLIN, 0});
    fds.push_back({s.listener, static_cast<short>(silent ? 0 : POLLIN), 0});
    // Read a side unless silent or its bytes already fill the other side's queue; wait to
    // write a side that has bytes due.
    auto queued = [](const std::deque<Chunk>& queue) {
      std::size_t n = 0;
      for (const auto& chunk : queue) n += chunk.bytes.size();
      return n;
    };
    auto events = [&](const std::deque<Chunk>& outgoing, const std::deque<Chunk>& incoming) {
      if (silent) return short{0};
      short e = queued(outgoing) < kMaxQueued ? POLLIN : 0;
      if (!incoming.empty() && (mode != Mode::kDelay || incoming.front().due <= now)) {
        e = static_cast<short>(e | POLLOUT);
      }
      return e;
    };
    for (const auto& p : s.pairs) {
      fds.push_back({p.client, events(p.to_target, p.to_client), 0});
      fds.push_back({p.target, events(p.to_client, p.to_target), 0});
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    if (fds[0].revents & POLLIN) {
      char drain[64];
      while (::read(s.wake[0], drain, sizeof drain) > 0) {
      }
    }
    if (!silent && (fds[1].revents & POLLIN)) {
      int client = ::accept4(s.listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        int target = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in addr = loopback(s.target_port);
        if (target >= 0 &&
            ::connect(target, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
          int one = 1;
          ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::setsockopt(target, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          s.pairs.push_back(Pair{client, target, {}, {}});
          ++accepted_;
          ++open_;
        } else {
          if (target >= 0) ::close(target);
          close_with_reset(client);
        }
      }
    }
    for (std::size_t i = 0; i < fds.size() - 2 && !silent; ++i) {
      const std::size_t pair_index = i / 2;
      if (pair_index >= s.pairs.size()) break;
      if ((fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      if ((fds[i + 2].events & POLLIN) == 0) continue;  // only writable, or held back
      Pair& p = s.pairs[pair_index];
      const bool from_client = i % 2 == 0;
      const int from = from_client ? p.client : p.target;
      ssize_t n = ::recv(from, buffer.data(), buffer.size(), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        dead.push_back(pair_index);
        continue;
      }
      if (n < 0) continue;
      (from_client ? p.to_target : p.to_client)
          .push_back(
              Chunk{Clock::now() + delay, std::string(buffer.data(), static_cast<std::size_t>(n))});
    }
    // A side that closed: close the other side too (with a FIN, as a proxy would).
    std::sort(dead.begin(), dead.end());
    dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
    for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
      ::close(s.pairs[*it].client);
      ::close(s.pairs[*it].target);
      s.pairs.erase(s.pairs.begin() + static_cast<std::ptrdiff_t>(*it));
      --open_;
    }
  }
}

bool enter_private_network_namespace(std::string* why) {
  if (::geteuid() != 0) {
    if (why) *why = "not root";
    return false;
  }
  if (::unshare(CLONE_NEWNET) != 0) {
    if (why) *why = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
    return false;
  }
  // Bring the new namespace's loopback up.
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq request{};
  std::snprintf(request.ifr_name, IFNAMSIZ, "lo");
  bool up = fd >= 0 && ::ioctl(fd, SIOCGIFFLAGS, &request) == 0;
  if (up) {
    request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP | IFF_RUNNING);
    up = ::ioctl(fd, SIOCSIFFLAGS, &request) == 0;
  }
  if (fd >= 0) ::close(fd);
  if (!up) {
    if (why) *why = std::string("cannot bring lo up: ") + std::strerror(errno);
    return false;
  }
  g_private_namespace = true;
  return true;
}

bool kernel_blackhole_available(std::string* why) {
  if (!g_private_namespace) {
    if (why) *why = "the test is not in a network namespace of its own";
    return false;
  }
  static const bool nft_works = [] {
    return run_quietly(
               "nft add table inet readpast_probe && nft delete table inet readpast_probe") == 0;
  }();
  if (!nft_works && why) *why = "`nft` cannot add rules here (nftables missing or not allowed)";
  return nft_works;
}

}  // namespace readpast::test
