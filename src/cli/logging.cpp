#include "cli/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>

#include "cli/job_text.hpp"
#include "readpast/time.hpp"

namespace readpast::cli {
namespace {

class ConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  ConsoleSink(Console& console, detail::SecretScrubber secrets)
      : console_(console), secrets_(std::move(secrets)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    // The message is scrubbed before it is formatted: JSON would quote a secret that holds
    // a '"' or a '\' differently.
    const std::string scrubbed =
        secrets_.scrub(std::string_view(message.payload.data(), message.payload.size()));
    spdlog::details::log_msg clean = message;
    clean.payload = scrubbed;
    spdlog::memory_buf_t formatted;
    formatter_->format(clean, formatted);
    console_.write_stderr(std::string_view(formatted.data(), formatted.size()));
  }
  void flush_() override {}

 private:
  Console& console_;
  const detail::SecretScrubber secrets_;
};

std::string_view level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::debug:
    case spdlog::level::trace:
      return to_string(LogLevel::kDebug);
    case spdlog::level::warn:
      return to_string(LogLevel::kWarn);
    case spdlog::level::err:
    case spdlog::level::critical:
      return to_string(LogLevel::kError);
    default:
      return to_string(LogLevel::kInfo);
  }
}

spdlog::level::level_enum spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::string json_line(std::chrono::system_clock::time_point time, std::string_view level,
                      std::string_view message,
                      const std::vector<std::pair<std::string, std::string>>& fields) {
  nlohmann::ordered_json line = {
      {"time", format_time(std::chrono::time_point_cast<Duration>(time))},
      {"level", level},
      {"msg", message},
  };
  for (const auto& [key, value] : fields) {
    if (key != "time" && key != "level" && key != "msg") line[key] = value;
  }
  // Text that is not valid UTF-8 (a command's stderr) is replaced, never fatal.
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// One JSON object per line, for the messages the command itself logs.
class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const std::string line =
        json_line(msg.time, level_name(msg.level),
                  std::string_view(msg.payload.data(), msg.payload.size()), {});
    dest.append(line.data(), line.data() + line.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }
};

}  // namespace

LogLevel lowest_level_shown(int verbosity) {
  return verbosity > 0 ? LogLevel::kDebug : verbosity < 0 ? LogLevel::kWarn : LogLevel::kInfo;
}

std::shared_ptr<spdlog::logger> make_logger(Console& console, LogStyle style, int verbosity,
                                            detail::SecretScrubber secrets) {
  auto logger = std::make_shared<spdlog::logger>(
      "readpast", std::make_shared<ConsoleSink>(console, std::move(secrets)));
  if (style == LogStyle::kJson) {
    logger->set_formatter(std::make_unique<JsonFormatter>());
  } else {
    logger->set_pattern(style == LogStyle::kPlain ? "readpast: %v" : "%Y-%m-%d %H:%M:%S.%e %l: %v");
  }
  logger->set_level(spdlog_level(lowest_level_shown(verbosity)));
  return logger;
}

Logger library_logger(std::shared_ptr<spdlog::logger> logger, LogStyle style, Console& console,
                      detail::SecretScrubber secrets) {
  if (style == LogStyle::kJson) {
    return [logger = std::move(logger), &console,
            secrets = std::move(secrets)](const LogRecord& record) {
      if (!logger->should_log(spdlog_level(record.level))) return;
      auto fields = record.fields;
      for (auto& field : fields) field.second = secrets.scrub(field.second);
      console.write_stderr(json_line(std::chrono::system_clock::now(), to_string(record.level),
                                     secrets.scrub(record.message), fields));
    };
  }
  // Scrubbed before it is escaped, which would change a secret with a '\' in it (the sink
  // then scrubs the escaped text again).
  return [logger = std::move(logger), secrets = std::move(secrets)](const LogRecord& record) {
    logger->log(spdlog_level(record.level), "{}",
                escape_for_terminal(secrets.scrub(record.message)));
  };
}

}  // namespace readpast::cli
