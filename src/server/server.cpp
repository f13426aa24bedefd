#include "server/server.hpp"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/prometheus.hpp"
#include "server/api.hpp"
#include "server/dashboard.hpp"
#include "server/guard.hpp"
#include "server/metrics.hpp"
#include "server/responses.hpp"
#include "server/router.hpp"
#include "server/throughput.hpp"

namespace readpast::server {
namespace {

// Threads beyond the cap on concurrent requests: they refuse excess requests at once (503)
// instead of leaving them queued, and serve idle keep-alive connections.
constexpr int kSpareThreads = 8;
constexpr time_t kKeepAliveSeconds = 5;

// The stable code of an error the HTTP library produced itself, before any route ran.
std::string_view code_for_status(int status) {
  switch (status) {
    case 400:
      return "invalid_argument";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 408:
      return "timeout";
    case 413:
      return "payload_too_large";
    case 414:
      return "uri_too_long";
    case 415:
      return "unsupported_media_type";
    case 503:
      return "unavailable";
    default:
      return status >= 500 ? "internal" : "invalid_argument";
  }
}

HttpRequest to_request(const httplib::Request& req) {
  HttpRequest request;
  request.method = req.method == "HEAD" ? "GET" : req.method;
  request.path = req.path;
  for (const auto& [name, value] : req.params) request.query.emplace(name, value);
  for (const auto& [name, value] : req.headers) request.headers.emplace(name, value);
  request.body = req.body;
  return request;
}

void write_response(HttpResponse response, httplib::Response& res) {
  add_security_headers(response);
  res.status = response.status;
  for (const auto& [name, value] : response.headers) res.set_header(name, value);
  res.set_content(std::move(response.body), response.content_type.c_str());
}

}  // namespace

Status validate(const ServerOptions& options) {
  if (!options.token && !is_loopback_host(options.listen.host)) {
    return fail_with(Error::invalid_argument(
        "listening on " + options.listen.to_string() +
        " lets other machines in: give a token (--token or READPAST_TOKEN), or listen on "
        "127.0.0.1"));
  }
  if (options.token && options.token->size() < kMinTokenLength) {
    return fail_with(Error::invalid_argument("the token must be at least " +
                                             std::to_string(kMinTokenLength) + " characters"));
  }
  if (options.max_body_bytes == 0) {
    return fail_with(Error::invalid_argument("the body size limit must be more than zero"));
  }
  if (options.io_timeout < std::chrono::milliseconds(1)) {
    return fail_with(Error::invalid_argument("the request timeout must be at least 1ms"));
  }
  if (options.max_concurrent_requests < 1 || options.max_concurrent_requests > 4096) {
    return fail_with(Error::invalid_argument("concurrent requests must be from 1 to 4096"));
  }
  if (options.sample_interval < std::chrono::milliseconds(10)) {
    return fail_with(Error::invalid_argument("the sample interval must be at least 10ms"));
  }
  return {};
}

struct Server::Impl {
  Impl(Queue& q, ServerOptions o)
      : queue(q),
        options(std::move(o)),
        guard({options.token, is_loopback_host(options.listen.host)}),
        throughput(q, options.sample_interval, options.throughput_history) {}

  HttpResponse handle(HttpRequest& request);
  HttpResponse healthz();
  HttpResponse metrics();
  void log(LogLevel level, std::string message) const {
    if (options.logger) options.logger(LogRecord{level, std::move(message), {}});
  }

  // Constant after bind().
  Queue& queue;
  const ServerOptions options;
  const RequestGuard guard;
  Router router;
  int port = 0;

  // Safe to use from any thread.
  Throughput throughput;
  RequestMetrics request_metrics;
  std::atomic<std::int64_t> in_flight{0};
  std::atomic<bool> stopping{false};
  std::atomic<bool> in_run{false};
  httplib::Server http;
};

HttpResponse Server::Impl::handle(HttpRequest& request) {
  if (auto refusal = guard.check(request)) return std::move(*refusal);
  if (request.path == "/healthz" && request.method == "GET") return healthz();
  if (request.path == "/metrics" && request.method == "GET") return metrics();
  return router.dispatch(request);
}

// 200 when the database answers (its clock), 503 "unavailable" when it does not.
HttpResponse Server::Impl::healthz() {
  auto now = queue.now();
  if (!now) {
    return json_response(
        503,
        {{"status", "unavailable"},
         {"error", {{"code", to_string(now.error().code)}, {"message", now.error().message}}}});
  }
  return json_response(200, {{"status", "ok"}, {"database_time", format_time(*now)}});
}

HttpResponse Server::Impl::metrics() {
  auto stats = queue.stats();
  if (!stats) return error_response(stats.error());
  std::string body = detail::prometheus_text(*stats);
  body += request_metrics.render(in_flight.load());
  return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(body), {}};
}

Server::Server(Key, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  stop();
}

Result<std::unique_ptr<Server>> Server::bind(Queue& queue, ServerOptions options) {
  if (auto ok = validate(options); !ok) return fail_with(ok.error());
  auto impl = std::make_unique<Impl>(queue, std::move(options));
  Impl& s = *impl;

  add_worker_routes(s.router, queue);
  add_job_routes(s.router, queue);
  add_queue_routes(s.router, queue, s.throughput);
  add_dashboard_routes(s.router);

  auto handler = [&s](const httplib::Request& req, httplib::Response& res) {
    HttpRequest request = to_request(req);
    // Counted out even when a route throws (the exception handler answers 500).
    struct InFlight {
      std::atomic<std::int64_t>& count;
      ~InFlight() { --count; }
    } in_flight{s.in_flight};
    const std::int64_t now_in_flight = ++s.in_flight;
    HttpResponse response;
    if (now_in_flight > s.options.max_concurrent_requests) {
      response = error_response(503, "unavailable",
                                "the server is busy (" +
                                    std::to_string(s.options.max_concurrent_requests) +
                                    " requests in progress); retry shortly");
      response.headers.emplace_back("Retry-After", "1");
    } else {
      response = s.handle(request);
    }
    s.request_metrics.record(response.status);
    write_response(std::move(response), res);
  };
  s.http.Get(".*", handler);
  s.http.Post(".*", handler);
  s.http.Delete(".*", handler);
  s.http.Options(".*", handler);
  s.http.Put(".*", handler);
  s.http.Patch(".*", handler);

  // Errors the library answers by itself (body too large, malformed request line): the same
  // JSON shape as ours. Routes' own error responses already have a body and pass through.
  s.http.set_error_handler(
      httplib::Server::HandlerWithResponse([&s](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        s.request_metrics.record(res.status);
        std::string_view code = code_for_status(res.status);
        std::string message = res.status == 413 ? "the request body is over the size limit"
                                                : "the request could not be handled";
        write_response(error_response(res.status, code, message), res);
        return httplib::Server::HandlerResponse::Handled;
      }));
  s.http.set_exception_handler(
      [&s](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        s.log(LogLevel::kError, req.method + " " + req.path + ": " + what);
        s.request_metrics.record(500);
        write_response(error_response(500, "internal", "internal error"), res);
      });
  s.http.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    LogLevel level = res.status >= 500 ? LogLevel::kWarn : LogLevel::kDebug;
    s.log(level, req.method + " " + req.path + " " + std::to_string(res.status));
  });

  s.http.set_payload_max_length(s.options.max_body_bytes);
  const auto timeout = std::chrono::duration_cast<std::chrono::microseconds>(s.options.io_timeout);
  s.http.set_read_timeout(timeout);
  s.http.set_write_timeout(timeout);
  s.http.set_keep_alive_timeout(kKeepAliveSeconds);
  s.http.set_keep_alive_max_count(100);
  const auto threads = static_cast<std::size_t>(s.options.max_concurrent_requests + kSpareThreads);
  // cpp-httplib takes ownership of the pool it is handed as a raw pointer.
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };

  const auto& listen = s.options.listen;
  if (listen.port == 0) {
    s.port = s.http.bind_to_any_port(listen.host);
    if (s.port < 0) s.port = 0;
  } else if (s.http.bind_to_port(listen.host, listen.port)) {
    s.port = listen.port;
  }
  if (s.port == 0) {
    return fail_with(Error::unavailable("cannot listen on " + listen.to_string() +
                                        " (address in use, or not an address of this machine)"));
  }
  return std::make_unique<Server>(Key{}, std::move(impl));
}

int Server::port() const noexcept {
  return impl_->port;
}

std::string Server::url() const {
  ListenAddress address{impl_->options.listen.host, impl_->port};
  return "http://" + address.to_string();
}

Status Server::run() {
  impl_->log(LogLevel::kInfo,
             "serving on " + url() + (impl_->options.token ? " (token required)" : "") +
                 "; throughput sampled every " + format_duration(impl_->options.sample_interval));
  impl_->in_run = true;
  bool ok = true;
  if (!impl_->stopping) {
    impl_->throughput.start();
    ok = impl_->http.listen_after_bind();
    impl_->throughput.stop();
  }
  impl_->in_run = false;
  if (!ok && !impl_->stopping) return fail_with(Error::unavailable("the listening socket failed"));
  return {};
}

void Server::stop() {
  impl_->stopping = true;
  // run() may be between its look at `stopping` and the start of the library's accept loop,
  // where the library's stop() would do nothing: wait for the loop to start.
  while (impl_->in_run && !impl_->http.is_running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  impl_->http.stop();
}

}  // namespace readpast::server
