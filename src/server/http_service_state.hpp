// server/http_service_state.hpp — what the listener (http_service.cpp) and its connections
// (http_connection.cpp) share. Private to those two files.
//
// Thread-safety: everything but `in_flight` and the pool is touched on the I/O thread only
// (the thread in HttpService::run()); `in_flight` is atomic; the pool is thread-safe.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <set>

#include "server/http_service.hpp"

namespace readpast::server {

class HttpConnection;

// Connections beyond max_connections are answered 503 and closed; this many of those may be
// in the middle of that answer at once (the rest are closed without one). Each lives for at
// most kRefusalLinger.
inline constexpr int kMaxRefusing = 64;
// After a refusal the server stops sending and reads (and drops) what the client still sends
// for this long, or up to kRefusalDrainBytes, before it closes: closing a socket with unread
// data resets the connection, and the client could lose the refusal before it reads it.
inline constexpr auto kRefusalLinger = std::chrono::seconds(1);
inline constexpr std::size_t kRefusalDrainBytes = 4u << 20;

struct HttpService::State {
  State(const HttpLimits& l, RequestScreen& s)
      : limits(l),
        screen(s),
        acceptor(io),
        accept_retry(io),
        pool(static_cast<std::size_t>(l.max_concurrent_requests)) {}

  const HttpLimits limits;
  RequestScreen& screen;
  boost::asio::io_context io{1};
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::steady_timer accept_retry;  // after EMFILE and the like
  boost::asio::thread_pool pool;
  int port = 0;

  // I/O thread only.
  std::set<std::shared_ptr<HttpConnection>> connections;  // serving (counted against the cap)
  int refusing = 0;                                       // being answered 503
  bool stopping = false;

  std::atomic<std::int64_t> in_flight{0};  // requests holding a slot
  std::atomic<bool> stop_requested{false};
};

}  // namespace readpast::server
