#include "cli/session.hpp"

#include "cli/logging.hpp"
#include "core/url.hpp"

namespace readpast::cli {

Session::Session(std::string db_url, std::size_t max_payload_bytes, int verbosity, bool json_logs)
    : db_url_(std::move(db_url)),
      max_payload_bytes_(max_payload_bytes),
      verbosity_(verbosity),
      style_(json_logs ? LogStyle::kJson : LogStyle::kPlain),
      logger_(make_logger(console_, style_, verbosity)) {}

std::string Session::printable_db_url() const {
  return detail::redact_url(db_url_);
}

void Session::use_worker_log_style() {
  if (style_ == LogStyle::kJson) return;
  style_ = LogStyle::kTimestamped;
  logger_ = make_logger(console_, style_, verbosity_);
}

Logger Session::library_logger() {
  return cli::library_logger(logger_, style_, console_);
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
