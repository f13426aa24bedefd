#include "cli/session.hpp"

#include <cstdlib>

#include "cli/logging.hpp"
#include "core/url.hpp"

namespace readpast::cli {
namespace {

// What this process knows that must not be printed: the database password, in the URL or
// in PGPASSWORD (which libpq reads too), and the HTTP API token of `serve`.
detail::SecretScrubber known_secrets(std::string_view db_url) {
  detail::SecretScrubber secrets;
  secrets.add_url_passwords(db_url);
  for (const char* name : {"PGPASSWORD", "READPAST_TOKEN"}) {
    if (const char* value = std::getenv(name)) secrets.add(value);
  }
  return secrets;
}

}  // namespace

Session::Session(std::string db_url, std::size_t max_payload_bytes, int verbosity, bool json_logs)
    : db_url_(std::move(db_url)),
      max_payload_bytes_(max_payload_bytes),
      verbosity_(verbosity),
      style_(json_logs ? LogStyle::kJson : LogStyle::kPlain),
      secrets_(known_secrets(db_url_)),
      logger_(make_logger(console_, style_, verbosity, secrets_)) {}

std::string Session::printable_db_url() const {
  return detail::redact_url(db_url_);
}

void Session::use_worker_log_style() {
  if (style_ == LogStyle::kJson) return;
  style_ = LogStyle::kTimestamped;
  logger_ = make_logger(console_, style_, verbosity_, secrets_);
}

void Session::add_secret(std::string_view secret) {
  secrets_.add(secret);
  logger_ = make_logger(console_, style_, verbosity_, secrets_);
}

Logger Session::library_logger() {
  return cli::library_logger(logger_, style_, console_, secrets_);
}

CliResult<Queue> Session::open(QueueOptions options) {
  options.max_payload_bytes = max_payload_bytes_;
  if (!options.logger) options.logger = library_logger();
  auto queue = Queue::open(db_url_, std::move(options));
  if (!queue) {
    // A URL that parsed but still has something the engine refuses is the user's input.
    if (queue.error().code == ErrorCode::kInvalidArgument) {
      return fail_cli(usage_error(queue.error().message));
    }
    return fail_cli(failure(queue.error()));
  }
  return std::move(*queue);
}

}  // namespace readpast::cli

namespace readpast::cli {

CliResult<Queue> Session::open_to_read() {
  QueueOptions options;
  options.read_only = true;
  return open(std::move(options));
}

}  // namespace readpast::cli
