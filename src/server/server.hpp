// server/server.hpp — `readpast serve`: the JSON API, /metrics, /healthz and the dashboard
// over HTTP (cpp-httplib underneath).
//
// Every request goes through, in order: the RequestGuard (Host, token, cross-site checks;
// guard.hpp), the cap on concurrent requests (503 "unavailable" beyond it), then the
// router. Bodies over max_body_bytes get 413 before a route runs; a client that sends or
// reads nothing for io_timeout is disconnected. A refused or malformed request changes
// nothing.
//
// Thread-safety: bind() and run() from one thread; stop() from any thread (e.g. a signal
// watcher). Requests are served by a pool of threads that share the Queue (thread-safe).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "readpast/options.hpp"
#include "readpast/queue.hpp"
#include "server/listen_address.hpp"

namespace readpast::server {

inline constexpr std::size_t kMinTokenLength = 16;

struct ServerOptions {
  // Default: 127.0.0.1:8080. Any address other than a loopback one needs a token.
  ListenAddress listen{"127.0.0.1", 8080};
  // The bearer token every API request must carry; at least kMinTokenLength bytes.
  // Default: none (allowed on loopback only).
  std::optional<std::string> token;
  std::size_t max_body_bytes = 32u << 20;          // Default: 32 MiB
  Duration io_timeout = std::chrono::seconds(10);  // Default: 10s
  int max_concurrent_requests = 32;                // Default: 32
  // How often jobs finished per second are sampled, and how much history is kept.
  Duration sample_interval = std::chrono::seconds(2);      // Default: 2s
  Duration throughput_history = std::chrono::minutes(10);  // Default: 10 minutes
  // Where the server logs (start, 5xx responses, requests at debug level). Default: nowhere.
  Logger logger;
};

// kInvalidArgument when the options cannot be served safely or at all: a non-loopback
// address without a token, a short token, limits out of range.
Status validate(const ServerOptions& options);

class Server {
 public:
  // Validates the options and binds the address (port 0: the system picks one).
  // REQUIRES: `queue` outlives the server.
  static Result<std::unique_ptr<Server>> bind(Queue& queue, ServerOptions options);
  struct Impl;
  struct Key {  // only bind() constructs a Server
    explicit Key() = default;
  };
  Server(Key, std::unique_ptr<Impl> impl);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const noexcept;
  // "http://127.0.0.1:8080"
  std::string url() const;

  // Serves until stop() is called. kUnavailable when the listening socket fails.
  Status run();
  // Stops accepting, finishes the requests in progress, and makes run() return.
  void stop();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace readpast::server
