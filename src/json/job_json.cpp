#include "json/job_json.hpp"

#include <chrono>

#include "core/utf8.hpp"
#include "core/validate.hpp"
#include "readpast/queue.hpp"

namespace readpast::json {
namespace {

template <class T, class F>
nlohmann::ordered_json or_null(const std::optional<T>& value, F&& convert) {
  if (!value) return nullptr;
  return convert(*value);
}

nlohmann::ordered_json text_or_null(const std::optional<std::string>& value) {
  return or_null(value, [](const std::string& s) { return nlohmann::ordered_json(s); });
}

nlohmann::ordered_json time_or_null(const std::optional<TimePoint>& value) {
  return or_null(value, [](TimePoint t) { return nlohmann::ordered_json(format_time(t)); });
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    unsigned v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (std::size_t rest = bytes.size() - i; rest > 0) {
    unsigned v = byte(i) << 16;
    if (rest == 2) v |= byte(i + 1) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int padding = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (padding == 1 && text[i + 2] == '=') return std::nullopt;  // "x=y=" is not base64
    unsigned v = 0;
    for (int k = 0; k < 4 - padding; ++k) {
      int digit = value(text[i + static_cast<std::size_t>(k)]);
      if (digit < 0) return std::nullopt;
      v |= static_cast<unsigned>(digit) << (18 - 6 * k);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (padding < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (padding < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

nlohmann::ordered_json job_to_json(const Job& job) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["id"] = job.id;
  j["queue"] = job.queue;
  j["state"] = std::string(to_string(job.state));
  j["priority"] = job.priority;
  j["run_at"] = format_time(job.run_at);
  j["attempts"] = job.attempts;
  j["max_attempts"] = job.max_attempts;
  j["lease_token"] =
      or_null(job.lease_token, [](const LeaseToken& t) { return nlohmann::ordered_json(t.hex()); });
  j["leased_by"] = text_or_null(job.leased_by);
  j["lease_expires_at"] = time_or_null(job.lease_expires_at);
  j["enqueued_at"] = format_time(job.enqueued_at);
  j["started_at"] = time_or_null(job.started_at);
  j["finished_at"] = time_or_null(job.finished_at);
  j["unique_key"] = text_or_null(job.unique_key);
  j["last_error"] = text_or_null(job.last_error);
  if (detail::is_valid_utf8(job.payload)) {
    j["payload"] = job.payload;
    j["payload_encoding"] = "utf8";
  } else {
    j["payload"] = base64_encode(job.payload);
    j["payload_encoding"] = "base64";
  }
  return j;
}

nlohmann::ordered_json dependencies_to_json(const Dependencies& dependencies) {
  auto edges = [](const std::vector<Dependency>& list) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const Dependency& edge : list) {
      if (edge.group) {
        out.push_back({{"group", *edge.group}, {"met", edge.met}});
        continue;
      }
      out.push_back({{"id", edge.id},
                     {"state", edge.state ? nlohmann::ordered_json(to_string(*edge.state))
                                          : nlohmann::ordered_json(nullptr)},
                     {"met", edge.met}});
    }
    return out;
  };
  return {{"group", dependencies.group ? nlohmann::ordered_json(*dependencies.group)
                                       : nlohmann::ordered_json(nullptr)},
          {"after", edges(dependencies.after)},
          {"dependents", edges(dependencies.dependents)},
          {"dependent_count", dependencies.dependent_count}};
}

nlohmann::ordered_json group_stats_to_json(const GroupStats& s) {
  nlohmann::ordered_json group = {{"waiting", s.waiting}, {"available", s.available},
                                  {"running", s.running}, {"succeeded", s.succeeded},
                                  {"dead", s.dead},       {"cancelled", s.cancelled},
                                  {"live", s.live},       {"waiters", s.waiters}};
  return {{"groups", {{s.name, group}}}};
}

nlohmann::ordered_json job_details_to_json(const Job& job) {
  nlohmann::ordered_json j = job_to_json(job);
  if (!job.progress) {
    j["progress"] = nullptr;
  } else if (detail::validate_progress(*job.progress)) {
    // Validated (depth included) before parsing: printing recurses once per level.
    j["progress"] = nlohmann::ordered_json::parse(*job.progress);
  } else {
    j["progress"] = *job.progress;
  }
  nlohmann::ordered_json errors = nlohmann::ordered_json::array();
  for (const JobError& e : job.errors) {
    errors.push_back({{"attempt", e.attempt},
                      {"at", format_time(e.at)},
                      {"worker", text_or_null(e.worker)},
                      {"error", e.error}});
  }
  j["errors"] = std::move(errors);
  return j;
}

nlohmann::ordered_json limits_to_json(const QueueLimits& limits) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["running"] = limits.running ? nlohmann::ordered_json(*limits.running) : nullptr;
  j["rate"] = limits.rate ? nlohmann::ordered_json(format_rate(*limits.rate)) : nullptr;
  return j;
}

nlohmann::ordered_json queue_stats_to_json(const QueueStats& s) {
  return {
      {"available", s.available},
      {"scheduled", s.scheduled},
      {"running", s.running},
      {"expired", s.expired},
      {"succeeded", s.succeeded},
      {"dead", s.dead},
      {"cancelled", s.cancelled},
      {"waiting", s.waiting},
      {"oldest_available_age_s", std::chrono::duration<double>(s.oldest_available_age).count()},
      {"paused", s.paused},
      {"limits", limits_to_json(s.limits)},
  };
}

nlohmann::ordered_json stats_to_json(const std::vector<QueueStats>& stats) {
  nlohmann::ordered_json queues = nlohmann::ordered_json::object();
  for (const auto& s : stats) queues[s.queue] = queue_stats_to_json(s);
  return nlohmann::ordered_json{{"queues", queues}};
}

std::string dump_json(const nlohmann::ordered_json& value) {
  return value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace readpast::json
