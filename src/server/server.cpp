#include "server/server.hpp"

#include <chrono>

#include "core/prometheus.hpp"
#include "readpast/worker.hpp"
#include "server/api.hpp"
#include "server/dashboard.hpp"
#include "server/guard.hpp"
#include "server/maintenance.hpp"
#include "server/metrics.hpp"
#include "server/responses.hpp"
#include "server/router.hpp"
#include "server/throughput.hpp"

namespace readpast::server {

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
  if (auto ok = validate(options.limits); !ok) return ok;
  if (options.sample_interval < std::chrono::milliseconds(10)) {
    return fail_with(Error::invalid_argument("the sample interval must be at least 10ms"));
  }
  if (options.retention_interval && *options.retention_interval < std::chrono::milliseconds(10)) {
    return fail_with(Error::invalid_argument("the retention interval must be at least 10ms"));
  }
  if (options.queue_refresh_interval < std::chrono::milliseconds(10)) {
    return fail_with(Error::invalid_argument("the queue refresh interval must be at least 10ms"));
  }
  return {};
}

struct Server::Impl final : RequestScreen {
  Impl(Queue& q, ServerOptions o)
      : queue(q),
        options(std::move(o)),
        guard({options.token, is_loopback_host(options.listen.host)}),
        throughput(q, options.sample_interval, options.throughput_history),
        maintenance(q, MaintenanceOptions{.rescue_interval = q.options().rescue_interval,
                                          .refresh_interval = options.queue_refresh_interval,
                                          .retention_interval = options.retention_interval,
                                          .by = default_worker_id() + "/serve",
                                          .logger = options.logger}) {}

  std::optional<HttpResponse> screen(HttpRequest& head) override;
  HttpResponse respond(HttpRequest& request) override;
  void finish(const HttpRequest& request, HttpResponse& response) override;

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

  // Safe to use from any thread.
  Throughput throughput;
  RequestMetrics request_metrics;
  // Its own thread, started and stopped by run().
  Maintenance maintenance;

  // Last, so that it is destroyed first: its pool's routes use everything above.
  std::unique_ptr<HttpService> http;
};

std::optional<HttpResponse> Server::Impl::screen(HttpRequest& head) {
  return screen_head(head, router, guard);
}

HttpResponse Server::Impl::respond(HttpRequest& request) {
  try {
    return router.dispatch(request);
  } catch (const std::exception& e) {
    log(LogLevel::kError, request.method + " " + request.path + ": " + e.what());
    return error_response(500, "internal", "internal error");
  }
}

void Server::Impl::finish(const HttpRequest& request, HttpResponse& response) {
  add_security_headers(response);
  request_metrics.record(response.status);
  if (!options.logger) return;  // the line below is built only for a logger
  const LogLevel level = response.status >= 500 ? LogLevel::kWarn : LogLevel::kDebug;
  // The path as decoded (request.path) is empty when the target was refused: log what was
  // sent then, cut short, since it is the client's text.
  std::string_view what = request.path.empty() ? request.target : request.path;
  log(level, request.method + " " + std::string(what.substr(0, 200)) + " " +
                 std::to_string(response.status));
}

// 200 when the database answers and its jobs table can be read, 503 "unavailable" when not:
// a probe must fail when the data routes would (a corrupt file, a missing schema), not only
// when the server is unreachable. Both reads are bounded: the clock, and one row by the
// primary key.
HttpResponse Server::Impl::healthz() {
  auto unavailable = [](const Error& error) {
    return json_response(
        503, {{"status", "unavailable"},
              {"error", {{"code", to_string(error.code)}, {"message", error.message}}}});
  };
  auto now = queue.now();
  if (!now) return unavailable(now.error());
  ListRequest one;
  one.limit = 1;
  if (auto jobs = queue.list(one); !jobs) return unavailable(jobs.error());
  return json_response(200, {{"status", "ok"}, {"database_time", format_time(*now)}});
}

HttpResponse Server::Impl::metrics() {
  auto stats = queue.stats();
  if (!stats) return error_response(stats.error());
  auto recorded = queue.metrics();
  if (!recorded) return error_response(recorded.error());
  auto health = queue.storage_health();
  if (!health) return error_response(health.error());
  std::string body = detail::prometheus_text(*stats);
  body += detail::prometheus_recorded_text(*recorded);
  body += detail::prometheus_storage_text(*health);
  body += request_metrics.render(http ? http->in_flight() : 0);
  return {200, "text/plain; version=0.0.4; charset=utf-8", std::move(body), {}};
}

Server::Server(Key, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  stop();
}

Result<std::unique_ptr<Server>> Server::bind(Queue& queue, ServerOptions options) {
  if (auto ok = validate(options); !ok) return fail_with(ok.error());
  if (options.token) options.secrets.add(*options.token);
  auto impl = std::make_unique<Impl>(queue, std::move(options));
  Impl& s = *impl;

  s.router.add("GET", "/healthz", [&s](const HttpRequest&) { return s.healthz(); });
  s.router.add("GET", "/metrics", [&s](const HttpRequest&) { return s.metrics(); });
  add_worker_routes(s.router, queue, s.options.secrets);
  add_job_routes(s.router, queue);
  add_queue_routes(s.router, queue, s.throughput);
  add_schedule_routes(s.router, queue);
  add_worker_process_routes(s.router, queue);
  add_storage_routes(s.router, queue);
  add_dashboard_routes(s.router);

  auto http = HttpService::bind(s.options.listen, s.options.limits, s);
  if (!http) return fail_with(http.error());
  s.http = std::move(*http);
  return std::make_unique<Server>(Key{}, std::move(impl));
}

int Server::port() const noexcept {
  return impl_->http->port();
}

std::string Server::url() const {
  ListenAddress address{impl_->options.listen.host, port()};
  return "http://" + address.to_string();
}

Status Server::run() {
  impl_->log(LogLevel::kInfo,
             "serving on " + url() + (impl_->options.token ? " (token required)" : "") +
                 "; throughput sampled every " + format_duration(impl_->options.sample_interval));
  impl_->throughput.start();
  impl_->maintenance.start();
  Status result = impl_->http->run();
  impl_->maintenance.stop();
  impl_->throughput.stop();
  return result;
}

void Server::stop() {
  impl_->http->stop();
}

}  // namespace readpast::server
