#include "cli/logging.hpp"

#include <spdlog/sinks/base_sink.h>

#include <mutex>

namespace readpast::cli {
namespace {

class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit ConsoleSink(Console& console) : console_(console) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    console_.write_stderr(std::string_view(formatted.data(), formatted.size()));
  }
  void flush_() override {}

 private:
  Console& console_;
};

}  // namespace

std::shared_ptr<spdlog::logger> make_logger(Console& console, LogStyle style, int verbosity) {
  auto logger =
      std::make_shared<spdlog::logger>("readpast", std::make_shared<ConsoleSink>(console));
  logger->set_pattern(style == LogStyle::kPlain ? "readpast: %v" : "%Y-%m-%d %H:%M:%S.%e %l: %v");
  logger->set_level(verbosity > 0   ? spdlog::level::debug
                    : verbosity < 0 ? spdlog::level::warn
                                    : spdlog::level::info);
  return logger;
}

Logger library_logger(std::shared_ptr<spdlog::logger> logger) {
  return [logger = std::move(logger)](const LogRecord& record) {
    const std::string& message = record.message;
    switch (record.level) {
      case LogLevel::kDebug:
        logger->debug("{}", message);
        break;
      case LogLevel::kInfo:
        logger->info("{}", message);
        break;
      case LogLevel::kWarn:
        logger->warn("{}", message);
        break;
      case LogLevel::kError:
        logger->error("{}", message);
        break;
    }
  };
}

}  // namespace readpast::cli
