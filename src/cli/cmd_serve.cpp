// readpast serve — the HTTP API and the web dashboard (src/server/), until SIGTERM/SIGINT.
#include <CLI/CLI.hpp>
#include <csignal>
#include <memory>
#include <optional>

#include "cli/arguments.hpp"
#include "cli/retention_args.hpp"
#include "cli/session.hpp"
#include "readpast/worker.hpp"
#include "server/server.hpp"

namespace readpast::cli {
namespace {

struct ServeArgs {
  std::string listen = std::string(server::kDefaultListen);
  std::optional<std::string> token;
  std::string max_body = "32MiB";
  std::string max_header_size = "16KiB";
  int max_headers = server::HttpLimits{}.max_headers;
  std::string timeout = "10s";
  int max_concurrent = server::HttpLimits{}.max_concurrent_requests;
  int max_connections = server::HttpLimits{}.max_connections;
  int backlog = server::HttpLimits{}.backlog;
  std::string sample_interval = "2s";
  RetentionArgs retention;
};

CliResult<server::ServerOptions> plan(const ServeArgs& args) {
  server::ServerOptions options;
  auto listen = server::parse_listen_address(args.listen);
  if (!listen) return fail_cli(usage_error("--listen: " + listen.error().message));
  options.listen = *listen;
  if (args.token && !args.token->empty()) options.token = *args.token;
  auto& limits = options.limits;
  auto max_body = parse_size_arg("--max-body", args.max_body);
  if (!max_body) return fail_cli(max_body.error());
  limits.max_body_bytes = *max_body;
  auto max_header = parse_size_arg("--max-header-size", args.max_header_size);
  if (!max_header) return fail_cli(max_header.error());
  limits.max_header_bytes = *max_header;
  limits.max_headers = args.max_headers;
  auto timeout = parse_positive_duration_arg("--timeout", args.timeout);
  if (!timeout) return fail_cli(timeout.error());
  limits.request_timeout = *timeout;
  limits.max_concurrent_requests = args.max_concurrent;
  limits.max_connections = args.max_connections;
  limits.backlog = args.backlog;
  auto interval = parse_positive_duration_arg("--sample-interval", args.sample_interval);
  if (!interval) return fail_cli(interval.error());
  options.sample_interval = *interval;
  if (auto ok = server::validate(options); !ok) return fail_cli(usage_error(ok.error().message));
  return options;
}

CliStatus serve(Session& session, const ServeArgs& args) {
  auto options = plan(args);
  if (!options) return fail_cli(options.error());
  auto retention = parse_retention(args.retention);
  if (!retention) return fail_cli(retention.error());
  session.use_worker_log_style();
  // A client that hangs up mid-response must give EPIPE, not kill the server.
  ::signal(SIGPIPE, SIG_IGN);
  // Before any thread exists, so that every thread inherits the blocked signals.
  ShutdownSignals signals;
  if (auto ok = signals.status(); !ok) return fail_cli(failure(ok.error()));

  // A token given with --token is as secret as READPAST_TOKEN: scrubbed from the log and
  // from the errors that workers store through the API.
  if (options->token) session.add_secret(*options->token);
  QueueOptions queue_options;
  queue_options.retention = *retention;
  auto queue = session.open(std::move(queue_options));
  if (!queue) return fail_cli(queue.error());
  options->logger = session.library_logger();
  options->secrets = session.secrets();
  auto server = server::Server::bind(*queue, std::move(*options));
  if (!server) return fail_cli(failure(server.error()));
  session.log().info("database {}", session.printable_db_url());
  signals.on_signal([&server](int) { (*server)->stop(); });
  Status result = (*server)->run();
  signals.on_signal(nullptr);
  session.log().info("stopped");
  if (!result) return fail_cli(failure(result.error()));
  return {};
}

}  // namespace

Command add_serve_command(CLI::App& parent) {
  auto args = std::make_shared<ServeArgs>();
  auto* app = add_command(
      parent, "serve", "Serve the HTTP API and the web dashboard",
      "Serve the JSON API (see docs/http.md), /metrics (Prometheus), /healthz and the "
      "dashboard at http://ADDRESS/ until SIGTERM or SIGINT. It listens on 127.0.0.1:8080 by "
      "default; any address other than a loopback one needs --token (or READPAST_TOKEN), "
      "which every API request must then carry as 'Authorization: Bearer TOKEN'. Prefer "
      "READPAST_TOKEN: a command line is visible to other users of the machine. The server "
      "also does for every queue what workers do for theirs: every second it ends expired "
      "leases of the queues with running jobs (see 'readpast rescue'), and it takes turns with "
      "the workers at deleting finished jobs past their retention (--retain-*), so that a "
      "queue nobody works on is kept tidy too.");
  app->add_option("--listen", args->listen, "HOST:PORT to listen on (default: 127.0.0.1:8080)")
      ->type_name("ADDR");
  app->add_option("--token", args->token,
                  "Bearer token for every API request, 16 characters or more "
                  "(default: $READPAST_TOKEN; none on loopback)")
      ->envname("READPAST_TOKEN")
      ->type_name("TOKEN");
  app->add_option("--max-body", args->max_body, "Largest request body (default: 32MiB)")
      ->type_name("SIZE");
  app->add_option("--max-header-size", args->max_header_size,
                  "Largest request line and headers together (default: 16KiB)")
      ->type_name("SIZE");
  app->add_option("--max-headers", args->max_headers, "Most headers in one request (default: 100)")
      ->type_name("N")
      ->check(CLI::Range(8, 10000));
  app->add_option("--timeout", args->timeout,
                  "A whole request (headers and body) must arrive within this, and its response "
                  "be taken within it again (default: 10s)")
      ->type_name("DUR");
  app->add_option("--max-concurrent", args->max_concurrent,
                  "Requests handled at once; more get 503 (default: 32)")
      ->type_name("N")
      ->check(CLI::Range(1, 4096));
  app->add_option("--max-connections", args->max_connections,
                  "Open connections, idle ones included; more get 503 (default: 512)")
      ->type_name("N")
      ->check(CLI::Range(1, 100000));
  app->add_option("--backlog", args->backlog,
                  "Connections the kernel queues before they are accepted (default: 511)")
      ->type_name("N")
      ->check(CLI::Range(1, 65535));
  app->add_option("--sample-interval", args->sample_interval,
                  "How often the throughput is sampled (default: 2s)")
      ->type_name("DUR");
  add_retention_options(*app, args->retention);
  return {app, [args](Session& session) { return serve(session, *args); }};
}

}  // namespace readpast::cli
