// server/http_service.hpp — HTTP/1.1 for `readpast serve`, built for hostile clients on
// Boost.Beast and Asio (docs/http.md says why this library and what it promises).
//
// The I/O model: one thread runs every socket with non-blocking I/O (Asio), so an idle or
// slow connection costs a file descriptor and a small buffer, never a thread. Requests whose
// headers passed the checks run on a pool of `max_concurrent_requests` threads, because a
// route may wait on the database.
//
// A request goes through, in order, each step bounded before anything is buffered:
//   1. accept: beyond `max_connections` open connections the client gets 503 and is
//      closed;
//   2. the request line and headers: at most `max_header_bytes` (431), at most
//      `max_headers` fields (431), within the request deadline;
//   3. RequestScreen::screen() on the I/O thread, with no body read: the target is decoded
//      once, the guard decides (token, Host, cross-site); a refusal is answered at once and
//      the connection closed, so an unauthenticated client never sends a body we read;
//   4. a slot among `max_concurrent_requests` (503 when none is free, body unread);
//   5. the body, chunked or not: at most `max_body_bytes` (413), refused as soon as the
//      declared length or the chunks received pass it;
//   6. RequestScreen::respond() on the pool, then the response, written within its own
//      deadline.
// The request deadline (`request_timeout`) runs from the first byte awaited to the last
// byte of the body: a client that trickles its headers or body is cut off when it ends,
// however often it sends a byte.
//
// Thread-safety: bind() and run() from one thread; stop() from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "readpast/error.hpp"
#include "readpast/time.hpp"
#include "server/http.hpp"
#include "server/listen_address.hpp"

namespace readpast::server {

struct HttpLimits {
  std::size_t max_header_bytes = 16u << 10;  // the request line and every header
  int max_headers = 100;
  std::size_t max_body_bytes = 32u << 20;
  Duration request_timeout = std::chrono::seconds(10);
  int max_connections = 512;
  int max_concurrent_requests = 32;
  int backlog = 511;  // the kernel caps it at net.core.somaxconn
};

// What the server does with a request; the HTTP layer knows nothing of routes or tokens.
class RequestScreen {
 public:
  virtual ~RequestScreen() = default;
  // On the I/O thread, before the body is read: may fill in the request (its decoded path
  // and query). A response refuses the request; nullopt lets it through. Must not block.
  virtual std::optional<HttpResponse> screen(HttpRequest& head) = 0;
  // On a pool thread, with the body: the response. May block (database calls).
  virtual HttpResponse respond(HttpRequest& request) = 0;
  // On the I/O thread, every response before it is written, also those the HTTP layer made
  // itself (limits, refusals): for headers every response carries, metrics and logs. The
  // request may be incomplete (a malformed or oversized head). Must not block.
  virtual void finish(const HttpRequest& request, HttpResponse& response) = 0;
};

class HttpService {
 public:
  // Binds and listens (port 0: the system picks one). kInvalidArgument for limits out of
  // range, kUnavailable when the address cannot be bound.
  // REQUIRES: `screen` outlives the service.
  static Result<std::unique_ptr<HttpService>> bind(const ListenAddress& address,
                                                   const HttpLimits& limits, RequestScreen& screen);
  ~HttpService();
  HttpService(const HttpService&) = delete;
  HttpService& operator=(const HttpService&) = delete;

  int port() const noexcept;
  // Requests being handled now (between their slot and their response).
  std::int64_t in_flight() const noexcept;

  // Serves on the calling thread until stop(). Requests in progress are finished first.
  Status run();
  // Stops accepting, closes idle connections, lets requests in progress finish, and makes
  // run() return. Safe before run() (run() then returns at once) and from any thread.
  void stop();

  struct State;
  struct Key {  // only bind() constructs an HttpService
    explicit Key() = default;
  };
  HttpService(Key, std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

// kInvalidArgument when a limit is out of range.
Status validate(const HttpLimits& limits);

}  // namespace readpast::server
