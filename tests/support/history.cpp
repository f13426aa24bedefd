#include "support/history.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <unordered_map>

namespace readpast::test {

std::int64_t to_micros(TimePoint t) {
  return t.time_since_epoch().count();
}
TimePoint from_micros(std::int64_t micros) {
  return TimePoint(Duration(micros));
}
TimePoint wall_now() {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

// --- writing ---

HistoryWriter::HistoryWriter(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open " + path);
}

HistoryWriter::~HistoryWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void HistoryWriter::write_line(const std::string& line) {
  std::string out = line + "\n";
  std::lock_guard lock(mu_);
  const char* data = out.data();
  std::size_t left = out.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "write history");
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
}

void HistoryWriter::record(const LeaseEvent& event) {
  write_line(to_json_line(event));
}
void HistoryWriter::record(const CompleteEvent& event) {
  write_line(to_json_line(event));
}

std::string to_json_line(const LeaseEvent& event) {
  nlohmann::json line = {{"type", "lease"},
                         {"job", event.job},
                         {"token", event.token},
                         {"process", event.process},
                         {"worker", event.worker},
                         {"attempt", event.attempt},
                         {"t_lease_start", to_micros(event.t_lease_start)},
                         {"t_lease_end", to_micros(event.t_lease_end)},
                         {"lease_expires_at", to_micros(event.lease_expires_at)}};
  return line.dump();
}

std::string to_json_line(const CompleteEvent& event) {
  nlohmann::json line = {{"type", "complete"},
                         {"job", event.job},
                         {"token", event.token},
                         {"process", event.process},
                         {"worker", event.worker},
                         {"accepted", event.accepted},
                         {"t_start", to_micros(event.t_start)},
                         {"t", to_micros(event.t)}};
  if (event.unknown) line["accepted"] = nullptr;
  if (!event.error.empty()) line["error"] = event.error;
  return line.dump();
}

// --- reading ---

void read_history_file(const std::string& path, History& history) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::system_error(ENOENT, std::generic_category(), "read " + path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::size_t pos = 0;
  int line_number = 0;
  while (pos < text.size()) {
    ++line_number;
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) {
      // A line without its newline: the writer was killed in the middle of it.
      ++history.torn_lines;
      break;
    }
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const std::string where = path + ":" + std::to_string(line_number);
    try {
      auto json = nlohmann::json::parse(line);
      const std::string type = json.at("type").get<std::string>();
      if (type == "lease") {
        LeaseEvent e;
        e.job = json.at("job").get<JobId>();
        e.token = json.at("token").get<std::string>();
        e.process = json.at("process").get<std::string>();
        e.worker = json.at("worker").get<std::string>();
        e.attempt = json.at("attempt").get<int>();
        e.t_lease_start = from_micros(json.at("t_lease_start").get<std::int64_t>());
        e.t_lease_end = from_micros(json.at("t_lease_end").get<std::int64_t>());
        e.lease_expires_at = from_micros(json.at("lease_expires_at").get<std::int64_t>());
        history.leases.push_back(std::move(e));
      } else if (type == "complete") {
        CompleteEvent e;
        e.job = json.at("job").get<JobId>();
        e.token = json.at("token").get<std::string>();
        e.process = json.at("process").get<std::string>();
        e.worker = json.at("worker").get<std::string>();
        if (json.at("accepted").is_null()) {
          e.unknown = true;
        } else {
          e.accepted = json.at("accepted").get<bool>();
        }
        if (json.contains("error")) e.error = json.at("error").get<std::string>();
        e.t_start = from_micros(json.at("t_start").get<std::int64_t>());
        e.t = from_micros(json.at("t").get<std::int64_t>());
        history.completions.push_back(std::move(e));
      } else {
        history.bad_lines.push_back(where + ": unknown event type '" + type + "'");
      }
    } catch (const nlohmann::json::exception& e) {
      history.bad_lines.push_back(where + ": " + e.what());
    }
  }
}

// --- checking ---

namespace {

std::string t(TimePoint tp) {
  return format_time(tp);
}

struct JobEvents {
  std::vector<const LeaseEvent*> leases;
  std::vector<const CompleteEvent*> completions;
};

}  // namespace

std::string CheckReport::summary(std::size_t max_violations) const {
  std::ostringstream out;
  out << jobs << " jobs, " << leases << " leases, " << accepted_completions
      << " accepted completions, " << rejected_completions << " rejected completions, "
      << unknown_completions << " completions of unknown outcome (" << completed_by_unknown
      << " jobs completed only so), " << duplicate_executions << " jobs executed more than once, "
      << reclaimed_from_killed << " reclaimed from killed processes, " << unrecorded_completions
      << " completions a killed process did not record; leases per job:";
  for (const auto& [count, n] : leases_per_job) out << " " << count << "x" << n;
  auto ms = [](Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  out << "; slowest lease call " << ms(slowest_lease_call) << " ms, slowest complete call "
      << ms(slowest_complete_call) << " ms, " << calls_over_1s << " calls over 1 s";
  for (std::size_t i = 0; i < rejections.size() && i < max_violations; ++i) {
    out << "\n  rejected: " << rejections[i];
  }
  out << "\n" << violations.size() << " violations";
  for (std::size_t i = 0; i < violations.size() && i < max_violations; ++i) {
    out << "\n  " << violations[i];
  }
  if (violations.size() > max_violations) {
    out << "\n  ... and " << violations.size() - max_violations << " more";
  }
  return out.str();
}

CheckReport check_history(const History& history, const std::vector<JobId>& enqueued,
                          const std::vector<Job>& final_jobs, const CheckOptions& options) {
  CheckReport report;
  auto violation = [&](std::string text) { report.violations.push_back(std::move(text)); };
  const Duration tol = options.clock_tolerance;

  for (const auto& bad : history.bad_lines) violation("unreadable history line " + bad);

  std::set<JobId> enqueued_set(enqueued.begin(), enqueued.end());
  if (enqueued_set.size() != enqueued.size()) violation("an id was returned by two enqueues");
  std::unordered_map<JobId, const Job*> final_by_id;
  for (const auto& job : final_jobs) final_by_id[job.id] = &job;
  report.jobs = static_cast<std::int64_t>(enqueued_set.size());

  // Lost jobs, and jobs that were never enqueued.
  for (JobId id : enqueued_set) {
    auto it = final_by_id.find(id);
    if (it == final_by_id.end()) {
      violation("job " + std::to_string(id) + " lost: not in the database");
    } else if (it->second->state != JobState::kSucceeded) {
      violation("job " + std::to_string(id) + " lost: it ended " +
                std::string(to_string(it->second->state)));
    }
  }
  for (const auto& job : final_jobs) {
    if (!enqueued_set.count(job.id)) {
      violation("job " + std::to_string(job.id) + " is in the database but was never enqueued");
    }
  }

  std::map<JobId, JobEvents> by_job;
  std::set<std::string> tokens_seen;
  std::set<std::pair<std::string, std::int64_t>> calls_seen;  // one batch call, many events
  auto timed = [&](const std::string& worker, TimePoint start, TimePoint end, Duration& slowest) {
    slowest = std::max(slowest, end - start);
    if (end - start > std::chrono::seconds(1) &&
        calls_seen.insert({worker, to_micros(start)}).second) {
      ++report.calls_over_1s;
    }
  };
  for (const auto& lease : history.leases) {
    timed(lease.worker, lease.t_lease_start, lease.t_lease_end, report.slowest_lease_call);
  }
  for (const auto& c : history.completions) {
    timed(c.worker, c.t_start, c.t, report.slowest_complete_call);
  }
  for (const auto& lease : history.leases) {
    ++report.leases;
    by_job[lease.job].leases.push_back(&lease);
    if (!tokens_seen.insert(lease.token).second) {
      violation("token " + lease.token + " handed out twice (job " + std::to_string(lease.job) +
                ")");
    }
  }
  for (const auto& completion : history.completions) {
    by_job[completion.job].completions.push_back(&completion);
    if (completion.accepted) {
      ++report.accepted_completions;
    } else if (completion.unknown) {
      ++report.unknown_completions;
    } else {
      ++report.rejected_completions;
    }
  }

  for (auto& [id, events] : by_job) {
    const std::string job = "job " + std::to_string(id);
    if (!enqueued_set.count(id)) {
      violation(job + " appears in the history but was never enqueued");
      continue;
    }
    auto& leases = events.leases;
    // Grant order: every lease of a run has the same duration, so the database's expiry
    // orders the grants; the call windows break ties.
    std::sort(leases.begin(), leases.end(), [](const LeaseEvent* a, const LeaseEvent* b) {
      if (a->lease_expires_at != b->lease_expires_at) {
        return a->lease_expires_at < b->lease_expires_at;
      }
      return a->t_lease_start < b->t_lease_start;
    });
    report.leases_per_job[static_cast<int>(leases.size())]++;
    if (leases.size() > 1) ++report.duplicate_executions;

    std::map<std::string, const LeaseEvent*> lease_of_token;
    for (const auto* lease : leases) lease_of_token[lease->token] = lease;

    // Accepted completions: at most one, with the latest lease's token.
    std::vector<const CompleteEvent*> accepted;
    for (const auto* c : events.completions) {
      if (c->accepted) accepted.push_back(c);
    }
    if (accepted.size() > 1) {
      std::string who;
      for (const auto* c : accepted) who += " " + c->worker + "@" + t(c->t);
      violation(job + " completed " + std::to_string(accepted.size()) + " times:" + who);
    }
    for (const auto* c : accepted) {
      auto it = lease_of_token.find(c->token);
      if (it == lease_of_token.end()) {
        violation(job + " completed by " + c->worker + " with token " + c->token +
                  " that no recorded lease carried");
      } else if (it->second != leases.back()) {
        violation(job + " completed by " + c->worker + " with the token of its lease expiring " +
                  t(it->second->lease_expires_at) + ", but " + leases.back()->worker +
                  " held a later lease (granted by " + t(leases.back()->t_lease_end) + ")");
      }
      for (const auto* lease : leases) {
        if (lease->t_lease_start > c->t + tol) {
          violation(job + " leased by " + lease->worker + " at " + t(lease->t_lease_start) +
                    " after its completion was accepted at " + t(c->t));
        }
      }
    }

    for (const auto* c : events.completions) {
      if (c->accepted || c->unknown || report.rejections.size() >= 10) continue;
      auto it = lease_of_token.find(c->token);
      std::string text = job + ": completion by " + c->worker + " called at " + t(c->t_start) +
                         ", returned at " + t(c->t) + ", rejected (" + c->error + ")";
      if (it != lease_of_token.end()) {
        text += "; its lease was granted in [" + t(it->second->t_lease_start) + ", " +
                t(it->second->t_lease_end) + "] and expired at " + t(it->second->lease_expires_at);
      }
      report.rejections.push_back(std::move(text));
    }

    // No two leases valid at once. Lease j ended no earlier than its expiry, or than the
    // start of the call that completed it; lease i was granted no later than its call
    // returned. Overlap is proven when lease i's call returned before lease j ended.
    for (std::size_t i = 1; i < leases.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        TimePoint j_end = leases[j]->lease_expires_at;
        for (const auto* c : accepted) {
          if (c->token == leases[j]->token) j_end = std::min(j_end, c->t_start);
        }
        if (leases[i]->t_lease_end + tol < j_end) {
          violation(job + ": lease by " + leases[i]->worker + " granted by " +
                    t(leases[i]->t_lease_end) + " while the lease by " + leases[j]->worker +
                    " was valid until " + t(j_end));
        }
      }
    }

    // Reclaimed from a killed process: its lease followed by another process's.
    for (std::size_t i = 0; i + 1 < leases.size(); ++i) {
      if (options.killed_processes.count(leases[i]->process) &&
          leases[i + 1]->process != leases[i]->process) {
        ++report.reclaimed_from_killed;
        break;
      }
    }

    auto final_it = final_by_id.find(id);
    if (final_it != final_by_id.end()) {
      const Job& row = *final_it->second;
      if (row.attempts < static_cast<int>(leases.size())) {
        violation(job + " has attempts " + std::to_string(row.attempts) + " after " +
                  std::to_string(leases.size()) + " recorded leases");
      }
      std::vector<const CompleteEvent*> unknown;
      for (const auto* c : events.completions) {
        if (c->unknown) unknown.push_back(c);
      }
      // One of the unknown completions committed; only the latest lease's token can have.
      const bool unknown_latest =
          !leases.empty() && std::any_of(unknown.begin(), unknown.end(), [&](const auto* c) {
            return c->token == leases.back()->token;
          });
      if (row.state == JobState::kSucceeded && accepted.empty()) {
        if (unknown_latest) {
          ++report.completed_by_unknown;
        } else if (!leases.empty() && options.killed_processes.count(leases.back()->process)) {
          ++report.unrecorded_completions;
        } else if (!unknown.empty()) {
          violation(job +
                    " succeeded, its completions are all of unknown outcome, and none "
                    "carried the token of its latest recorded lease (by " +
                    (leases.empty() ? std::string("nobody") : leases.back()->worker) + ")");
        } else {
          violation(job + " succeeded without any accepted completion in the history");
        }
      }
    }
  }

  // Succeeded jobs nobody was seen leasing.
  for (JobId id : enqueued_set) {
    auto it = final_by_id.find(id);
    if (it != final_by_id.end() && it->second->state == JobState::kSucceeded &&
        (!by_job.count(id) || by_job[id].leases.empty())) {
      violation("job " + std::to_string(id) + " succeeded but no lease of it was recorded");
    }
  }
  return report;
}

}  // namespace readpast::test
