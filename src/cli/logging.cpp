#include "cli/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
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

// The library's fields that hold numbers (docs/worker.md, "Observability"). LogRecord
// carries every value as text; these are written as JSON numbers, so that a log pipeline
// can compare and sum them without a cast. A field is a number by its name, never by its
// look: a queue or worker may well be called "42", and stays a string.
constexpr std::array<std::string_view, 7> kNumberFields = {
    "job_id", "attempt", "duration_ms", "removed", "pid", "age_seconds", "transactions"};

nlohmann::ordered_json field_value(std::string_view key, const std::string& value) {
  if (std::find(kNumberFields.begin(), kNumberFields.end(), key) == kNumberFields.end()) {
    return value;
  }
  std::int64_t number = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  // Text that is not a whole number (it cannot be, today) is kept rather than lost.
  if (ec != std::errc() || end != value.data() + value.size()) return value;
  return number;
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
    if (key != "time" && key != "level" && key != "msg") line[key] = field_value(key, value);
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
