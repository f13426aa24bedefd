#include "server/http_service.hpp"

#include <sys/resource.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include "server/http_connection.hpp"
#include "server/http_service_state.hpp"

namespace readpast::server {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// File descriptors besides the connections: the database's, the listening socket, logs.
constexpr rlim_t kSpareDescriptors = 64;

// Raises the soft limit on open files to what the connection cap needs, within the hard
// limit: a server that hits EMFILE cannot even answer 503.
Status ensure_descriptors(int max_connections) {
  const rlim_t needed = static_cast<rlim_t>(max_connections) + kMaxRefusing + kSpareDescriptors;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return {};
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? needed : std::min(needed, limit.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    return fail_with(Error::invalid_argument(
        std::to_string(max_connections) + " connections need about " + std::to_string(needed) +
        " open files, and this process may open " + std::to_string(limit.rlim_cur) +
        " (ulimit -n): lower --max-connections or raise the limit"));
  }
  return {};
}

bool is_resource_exhaustion(const boost::system::error_code& ec) {
  return ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
         ec == asio::error::no_memory || ec.value() == ENFILE;
}

void start_accept(HttpService::State& state);

void on_accept(HttpService::State& state, boost::system::error_code ec, tcp::socket socket) {
  if (state.stopping || ec == asio::error::operation_aborted) return;
  if (ec) {
    if (is_resource_exhaustion(ec)) {
      // Out of descriptors or memory: wait for connections to end instead of spinning.
      state.accept_retry.expires_after(std::chrono::milliseconds(50));
      state.accept_retry.async_wait([&state](boost::system::error_code wait_ec) {
        if (!wait_ec) start_accept(state);
      });
      return;
    }
    return start_accept(state);
  }
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  if (static_cast<int>(state.connections.size()) >= state.limits.max_connections) {
    if (state.refusing < kMaxRefusing) {
      ++state.refusing;
      std::make_shared<HttpConnection>(std::move(socket), state)->refuse_over_capacity();
    }
    // Beyond that the socket closes as it goes out of scope: no answer, but no hang either.
  } else {
    auto connection = std::make_shared<HttpConnection>(std::move(socket), state);
    state.connections.insert(connection);
    connection->start();
  }
  start_accept(state);
}

void start_accept(HttpService::State& state) {
  state.acceptor.async_accept(state.io, [&state](boost::system::error_code ec, tcp::socket socket) {
    on_accept(state, ec, std::move(socket));
  });
}

}  // namespace

Status validate(const HttpLimits& limits) {
  auto bad = [](std::string message) {
    return fail_with(Error::invalid_argument(std::move(message)));
  };
  if (limits.max_header_bytes < 1024 || limits.max_header_bytes > (1u << 20)) {
    return bad("the header size limit must be from 1KiB to 1MiB");
  }
  if (limits.max_headers < 8 || limits.max_headers > 10000) {
    return bad("the header count limit must be from 8 to 10000");
  }
  if (limits.max_body_bytes == 0) return bad("the body size limit must be more than zero");
  if (limits.request_timeout < std::chrono::milliseconds(1)) {
    return bad("the request timeout must be at least 1ms");
  }
  if (limits.max_connections < 1 || limits.max_connections > 100000) {
    return bad("the connection limit must be from 1 to 100000");
  }
  if (limits.max_concurrent_requests < 1 || limits.max_concurrent_requests > 4096) {
    return bad("concurrent requests must be from 1 to 4096");
  }
  if (limits.backlog < 1 || limits.backlog > 65535) {
    return bad("the listen backlog must be from 1 to 65535");
  }
  return {};
}

HttpService::HttpService(Key, std::unique_ptr<State> state) : state_(std::move(state)) {}

HttpService::~HttpService() {
  stop();
  state_->pool.join();
}

Result<std::unique_ptr<HttpService>> HttpService::bind(const ListenAddress& address,
                                                       const HttpLimits& limits,
                                                       RequestScreen& screen) {
  if (auto ok = validate(limits); !ok) return fail_with(ok.error());
  if (auto ok = ensure_descriptors(limits.max_connections); !ok) return fail_with(ok.error());
  auto state = std::make_unique<State>(limits, screen);
  auto cannot_listen = [&address](const std::string& why) {
    return fail_with(Error::unavailable("cannot listen on " + address.to_string() + ": " + why));
  };
  boost::system::error_code ec;
  tcp::resolver resolver(state->io);
  auto endpoints = resolver.resolve(address.host, std::to_string(address.port),
                                    tcp::resolver::numeric_service | tcp::resolver::passive, ec);
  if (ec || endpoints.empty()) return cannot_listen("not an address of this machine");
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  auto& acceptor = state->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (ec) return cannot_listen(ec.message());
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  acceptor.bind(endpoint, ec);
  if (ec) {
    return cannot_listen(ec.message() + " (address in use, or not an address of this machine)");
  }
  acceptor.listen(limits.backlog, ec);
  if (ec) return cannot_listen(ec.message());
  state->port = acceptor.local_endpoint(ec).port();
  return std::make_unique<HttpService>(Key{}, std::move(state));
}

int HttpService::port() const noexcept {
  return state_->port;
}

std::int64_t HttpService::in_flight() const noexcept {
  return state_->in_flight.load();
}

Status HttpService::run() {
  start_accept(*state_);
  try {
    state_->io.run();
  } catch (const std::exception& e) {
    return fail_with(Error::internal(std::string("the HTTP server failed: ") + e.what()));
  }
  return {};
}

void HttpService::stop() {
  if (state_->stop_requested.exchange(true)) return;
  asio::post(state_->io, [&state = *state_] {
    state.stopping = true;
    boost::system::error_code ignored;
    state.acceptor.close(ignored);
    state.accept_retry.cancel();
    // A copy: shutting a connection down removes it from the set.
    auto connections = state.connections;
    for (const auto& connection : connections) connection->shut_down();
  });
}

}  // namespace readpast::server
