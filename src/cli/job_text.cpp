#include "cli/job_text.hpp"

#include <fmt/format.h>

#include <chrono>

#include "core/utf8.hpp"
#include "readpast/queue.hpp"

namespace readpast::cli {

std::string escape_for_terminal(std::string_view text, std::size_t max_chars) {
  std::string out;
  std::size_t chars = 0;
  while (!text.empty()) {
    if (max_chars > 0 && chars == max_chars) {
      out += "...";
      break;
    }
    ++chars;
    auto c = static_cast<unsigned char>(text.front());
    std::size_t length = detail::utf8_sequence_length(text);
    if (length == 0) {
      out += fmt::format("\\x{:02x}", c);
      text.remove_prefix(1);
      continue;
    }
    if (length == 1) {
      switch (c) {
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", c);
          } else {
            out += static_cast<char>(c);
          }
      }
      text.remove_prefix(1);
      continue;
    }
    // C1 controls U+0080..U+009F are encoded as C2 80..C2 9F; some terminals obey them.
    if (length == 2 && c == 0xC2 && static_cast<unsigned char>(text[1]) < 0xA0) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[1]));
    } else {
      out.append(text.substr(0, length));
    }
    text.remove_prefix(length);
  }
  return out;
}

std::string display_state(const Job& job, TimePoint now) {
  if (job.state == JobState::kAvailable) {
    if (job.run_at > now) return "scheduled";
    if (job.attempts > 0) return "retrying";
  }
  return std::string(to_string(job.state));
}

std::string short_time(TimePoint t) {
  std::string text = format_time(t);  // 2026-11-22T10:00:00.250000Z
  auto dot = text.find('.');
  if (dot != std::string::npos) text = text.substr(0, dot) + "Z";
  return text;
}

namespace {

// "12 (succeeded, met), 13 (running)": the other end of each edge.
std::string edges_text(const std::vector<Dependency>& edges) {
  std::string out;
  for (const Dependency& edge : edges) {
    if (!out.empty()) out += ", ";
    if (edge.group) {
      out += fmt::format("group {}{}", *edge.group, edge.met ? " (finished)" : "");
      continue;
    }
    out += fmt::format("{} ({}{})", edge.id,
                       edge.state ? to_string(*edge.state) : std::string_view("purged"),
                       edge.met ? ", met" : "");
  }
  return out;
}

}  // namespace

std::string job_details(const Job& job, TimePoint now, const Dependencies& dependencies) {
  std::string out;
  auto field = [&](std::string_view name, const std::string& value) {
    out += fmt::format("{:<18}{}\n", std::string(name) + ":", value);
  };
  auto optional_text = [](const std::optional<std::string>& s) {
    return s ? escape_for_terminal(*s) : std::string("-");
  };
  auto optional_time = [](const std::optional<TimePoint>& t) {
    return t ? format_time(*t) : std::string("-");
  };
  field("id", std::to_string(job.id));
  field("queue", job.queue);
  std::string state(to_string(job.state));
  std::string shown = display_state(job, now);
  field("state", shown == state ? state : fmt::format("{} ({})", state, shown));
  field("priority", std::to_string(job.priority));
  field("run_at", format_time(job.run_at));
  field("attempts", fmt::format("{} of {}", job.attempts, job.max_attempts));
  field("lease_token", job.lease_token ? job.lease_token->hex() : std::string("-"));
  field("leased_by", optional_text(job.leased_by));
  field("lease_expires_at", optional_time(job.lease_expires_at));
  field("enqueued_at", format_time(job.enqueued_at));
  field("started_at", optional_time(job.started_at));
  field("finished_at", optional_time(job.finished_at));
  field("unique_key", optional_text(job.unique_key));
  field("last_error", optional_text(job.last_error));
  if (dependencies.group) field("group", *dependencies.group);
  if (!dependencies.after.empty()) field("waits for", edges_text(dependencies.after));
  if (dependencies.dependent_count > 0) {
    const auto listed = static_cast<std::int64_t>(dependencies.dependents.size());
    field("waited for by",
          edges_text(dependencies.dependents) +
              (dependencies.dependent_count > listed
                   ? fmt::format(" and {} more", dependencies.dependent_count - listed)
                   : std::string()));
  }
  field("progress", optional_text(job.progress));
  field("errors", job.errors.empty() ? std::string("-") : std::to_string(job.errors.size()));
  for (const JobError& e : job.errors) {
    out += fmt::format("  attempt {} at {} by {}: {}\n", e.attempt, format_time(e.at),
                       optional_text(e.worker), escape_for_terminal(e.error));
  }
  field("payload", fmt::format("{} bytes{}", job.payload.size(),
                               detail::is_valid_utf8(job.payload) ? "" : ", not UTF-8"));
  out += escape_for_terminal(job.payload);
  out += '\n';
  return out;
}

std::string limits_text(const QueueLimits& limits) {
  std::string text;
  if (limits.running) text = "running " + std::to_string(*limits.running);
  if (limits.rate) text += (text.empty() ? "rate " : ", rate ") + format_rate(*limits.rate);
  return text.empty() ? "-" : text;
}

}  // namespace readpast::cli
