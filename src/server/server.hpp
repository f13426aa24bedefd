// server/server.hpp — `readpast serve`: the JSON API, /metrics, /healthz and the dashboard
// over HTTP (http_service.hpp underneath: Boost.Beast, one I/O thread, a pool for routes).
//
// Every request goes through, in order: the HTTP layer's limits (connections, header size
// and count, the request deadline), the one decoding of its target (request_target.hpp),
// the RequestGuard (Host, token, cross-site; guard.hpp) on the route the router matches,
// the cap on concurrent requests (503 "unavailable" beyond it), the body limit (413), then
// the route. A refused or malformed request changes nothing, and a request refused before
// its body has its body left unread.
//
// Thread-safety: bind() and run() from one thread; stop() from any thread (e.g. a signal
// watcher). Routes run on a pool of threads that share the Queue (thread-safe).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/secret_scrubber.hpp"
#include "readpast/options.hpp"
#include "readpast/queue.hpp"
#include "server/http_service.hpp"
#include "server/listen_address.hpp"

namespace readpast::server {

inline constexpr std::size_t kMinTokenLength = 16;

struct ServerOptions {
  // Default: 127.0.0.1:8080. Any address other than a loopback one needs a token.
  ListenAddress listen{"127.0.0.1", 8080};
  // The bearer token every API request must carry; at least kMinTokenLength bytes.
  // Default: none (allowed on loopback only).
  std::optional<std::string> token;
  // Sizes, counts and deadlines of requests and connections (see HttpLimits' defaults).
  HttpLimits limits;
  // How often jobs finished per second are sampled, and how much history is kept.
  Duration sample_interval = std::chrono::seconds(2);      // Default: 2s
  Duration throughput_history = std::chrono::minutes(10);  // Default: 10 minutes
  // The server rescues the expired leases of every queue with running jobs each
  // QueueOptions::rescue_interval, and looks up which queues those are this often
  // (maintenance.hpp).
  Duration queue_refresh_interval = std::chrono::seconds(10);  // Default: 10s
  // The server takes turns with the workers at retention, for every queue with finished
  // jobs, this often; nullopt: never. What goes is its Queue's QueueOptions::retention.
  std::optional<Duration> retention_interval = std::chrono::minutes(1);  // Default: 1 min
  // Where the server logs (start, 5xx responses, requests at debug level). Default: nowhere.
  Logger logger;
  // Secrets this process knows (the token, the database password): scrubbed from the error
  // text a client stores with POST /api/jobs/ID/fail, which the dashboard and every reader
  // of the job would show. The token is added by bind().
  detail::SecretScrubber secrets;
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

  // Serves until stop() is called.
  Status run();
  // Stops accepting, finishes the requests in progress, and makes run() return.
  void stop();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace readpast::server
