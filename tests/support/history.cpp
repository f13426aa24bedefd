#include "support/history.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
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

std::string_view to_string(SettleEvent::Kind kind) noexcept {
  switch (kind) {
    case SettleEvent::Kind::kFail:
      return "fail";
    case SettleEvent::Kind::kExtend:
      return "extend";
    case SettleEvent::Kind::kRelease:
      return "release";
  }
  return "fail";
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

void HistoryWriter::record(const EnqueueEvent& event) {
  write_line(to_json_line(event));
}
void HistoryWriter::record(const LeaseEvent& event) {
  write_line(to_json_line(event));
}
void HistoryWriter::record(const ExecEvent& event) {
  write_line(to_json_line(event));
}
void HistoryWriter::record(const CompleteEvent& event) {
  write_line(to_json_line(event));
}
void HistoryWriter::record(const SettleEvent& event) {
  write_line(to_json_line(event));
}
void HistoryWriter::record(const FaultEvent& event) {
  write_line(to_json_line(event));
}

namespace {

// Payloads and messages may hold bytes that are not UTF-8: replace them rather than throw.
std::string dump(const nlohmann::json& line) {
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// "accepted": true, false, or null for an unknown outcome.
void put_outcome(nlohmann::json& line, bool accepted, bool unknown) {
  line["accepted"] = accepted;
  if (unknown) line["accepted"] = nullptr;
}

}  // namespace

std::string to_json_line(const EnqueueEvent& event) {
  nlohmann::json line = {{"type", "enqueue"},
                         {"job", event.job},
                         {"payload", event.payload},
                         {"process", event.process},
                         {"max_attempts", event.max_attempts},
                         {"t_start", to_micros(event.t_start)},
                         {"t", to_micros(event.t)}};
  put_outcome(line, event.accepted, event.unknown);
  if (!event.error.empty()) line["error"] = event.error;
  return dump(line);
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
  return dump(line);
}

std::string to_json_line(const ExecEvent& event) {
  nlohmann::json line = {
      {"type", event.phase == ExecEvent::Phase::kStart ? "exec_start" : "exec_end"},
      {"job", event.job},
      {"token", event.token},
      {"process", event.process},
      {"worker", event.worker},
      {"attempt", event.attempt},
      {"pid", event.pid},
      {"t", to_micros(event.t)}};
  if (event.phase == ExecEvent::Phase::kEnd) line["result"] = event.result;
  return dump(line);
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
  put_outcome(line, event.accepted, event.unknown);
  if (!event.error.empty()) line["error"] = event.error;
  return dump(line);
}

std::string to_json_line(const SettleEvent& event) {
  nlohmann::json line = {{"type", std::string(to_string(event.kind))},
                         {"job", event.job},
                         {"token", event.token},
                         {"process", event.process},
                         {"worker", event.worker},
                         {"t_start", to_micros(event.t_start)},
                         {"t", to_micros(event.t)}};
  put_outcome(line, event.accepted, event.unknown);
  if (!event.error.empty()) line["error"] = event.error;
  if (!event.outcome.empty()) line["outcome"] = event.outcome;
  if (event.kind == SettleEvent::Kind::kExtend) line["lease_us"] = event.lease_duration.count();
  return dump(line);
}

std::string to_json_line(const FaultEvent& event) {
  nlohmann::json line = {{"type", "fault"},
                         {"kind", event.kind},
                         {"target", event.target},
                         {"t_start", to_micros(event.t_start)},
                         {"t", to_micros(event.t)}};
  if (!event.detail.empty()) line["detail"] = event.detail;
  return dump(line);
}

// --- reading ---

namespace {

TimePoint time_at(const nlohmann::json& json, const char* key) {
  return from_micros(json.at(key).get<std::int64_t>());
}

std::string text_or_empty(const nlohmann::json& json, const char* key) {
  return json.contains(key) ? json.at(key).get<std::string>() : std::string();
}

// Reads "accepted" (true, false or null) into the two flags.
void get_outcome(const nlohmann::json& json, bool& accepted, bool& unknown) {
  if (json.at("accepted").is_null()) {
    unknown = true;
    accepted = false;
  } else {
    accepted = json.at("accepted").get<bool>();
  }
}

// Throws nlohmann::json::exception on a missing or mistyped field; false on an unknown type.
bool read_event(const nlohmann::json& json, History& history) {
  const std::string type = json.at("type").get<std::string>();
  if (type == "lease") {
    LeaseEvent e;
    e.job = json.at("job").get<JobId>();
    e.token = json.at("token").get<std::string>();
    e.process = json.at("process").get<std::string>();
    e.worker = json.at("worker").get<std::string>();
    e.attempt = json.at("attempt").get<int>();
    e.t_lease_start = time_at(json, "t_lease_start");
    e.t_lease_end = time_at(json, "t_lease_end");
    e.lease_expires_at = time_at(json, "lease_expires_at");
    history.leases.push_back(std::move(e));
  } else if (type == "complete") {
    CompleteEvent e;
    e.job = json.at("job").get<JobId>();
    e.token = json.at("token").get<std::string>();
    e.process = json.at("process").get<std::string>();
    e.worker = json.at("worker").get<std::string>();
    get_outcome(json, e.accepted, e.unknown);
    e.error = text_or_empty(json, "error");
    e.t_start = time_at(json, "t_start");
    e.t = time_at(json, "t");
    history.completions.push_back(std::move(e));
  } else if (type == "fail" || type == "extend" || type == "release") {
    SettleEvent e;
    e.kind = type == "fail"     ? SettleEvent::Kind::kFail
             : type == "extend" ? SettleEvent::Kind::kExtend
                                : SettleEvent::Kind::kRelease;
    e.job = json.at("job").get<JobId>();
    e.token = json.at("token").get<std::string>();
    e.process = json.at("process").get<std::string>();
    e.worker = json.at("worker").get<std::string>();
    get_outcome(json, e.accepted, e.unknown);
    e.error = text_or_empty(json, "error");
    e.outcome = text_or_empty(json, "outcome");
    if (json.contains("lease_us"))
      e.lease_duration = Duration(json.at("lease_us").get<Duration::rep>());
    e.t_start = time_at(json, "t_start");
    e.t = time_at(json, "t");
    history.settles.push_back(std::move(e));
  } else if (type == "exec_start" || type == "exec_end") {
    ExecEvent e;
    e.phase = type == "exec_start" ? ExecEvent::Phase::kStart : ExecEvent::Phase::kEnd;
    e.job = json.at("job").get<JobId>();
    e.token = json.at("token").get<std::string>();
    e.process = json.at("process").get<std::string>();
    e.worker = json.at("worker").get<std::string>();
    e.attempt = json.at("attempt").get<int>();
    e.pid = json.at("pid").get<long>();
    e.result = text_or_empty(json, "result");
    e.t = time_at(json, "t");
    history.execs.push_back(std::move(e));
  } else if (type == "enqueue") {
    EnqueueEvent e;
    e.job = json.at("job").get<JobId>();
    e.payload = json.at("payload").get<std::string>();
    e.process = json.at("process").get<std::string>();
    get_outcome(json, e.accepted, e.unknown);
    e.error = text_or_empty(json, "error");
    e.max_attempts = json.at("max_attempts").get<int>();
    e.t_start = time_at(json, "t_start");
    e.t = time_at(json, "t");
    history.enqueues.push_back(std::move(e));
  } else if (type == "fault") {
    FaultEvent e;
    e.kind = json.at("kind").get<std::string>();
    e.target = json.at("target").get<std::string>();
    e.detail = text_or_empty(json, "detail");
    e.t_start = time_at(json, "t_start");
    e.t = time_at(json, "t");
    history.faults.push_back(std::move(e));
  } else {
    return false;
  }
  return true;
}

}  // namespace

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
      if (!read_event(json, history)) {
        history.bad_lines.push_back(where + ": unknown event type '" +
                                    json.at("type").get<std::string>() + "'");
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
  std::vector<const SettleEvent*> settles;
  std::vector<const ExecEvent*> starts;
  std::vector<const ExecEvent*> ends;
};

// Black-box runs: each exec_start stands for a lease (expiry unknown), and the final row's
// token names the execution whose completion was accepted.
void synthesize_black_box(const History& history, const std::vector<Job>& final_jobs,
                          std::vector<LeaseEvent>& leases,
                          std::vector<CompleteEvent>& completions) {
  std::map<std::pair<JobId, std::string>, const ExecEvent*> end_of;
  std::map<std::pair<JobId, std::string>, const ExecEvent*> start_of;
  for (const auto& e : history.execs) {
    const auto key = std::make_pair(e.job, e.token);
    if (e.phase == ExecEvent::Phase::kEnd) {
      end_of[key] = &e;
      continue;
    }
    if (!start_of.emplace(key, &e).second) continue;  // one lease per token
    LeaseEvent lease;
    lease.job = e.job;
    lease.token = e.token;
    lease.process = e.process;
    lease.worker = e.worker;
    lease.attempt = e.attempt;
    lease.t_lease_start = e.t;
    lease.t_lease_end = e.t;
    leases.push_back(std::move(lease));
  }
  for (const auto& row : final_jobs) {
    if (row.state != JobState::kSucceeded || !row.lease_token) continue;
    const auto key = std::make_pair(row.id, row.lease_token->hex());
    auto start = start_of.find(key);
    if (start == start_of.end()) continue;  // the checker reports it (no lease recorded)
    auto end = end_of.find(key);
    CompleteEvent c;
    c.job = row.id;
    c.token = key.second;
    c.process = start->second->process;
    c.worker = start->second->worker;
    c.accepted = true;
    c.t_start = end != end_of.end() ? end->second->t : start->second->t;
    c.t = c.t_start;
    completions.push_back(std::move(c));
  }
}

}  // namespace

std::string CheckReport::summary(std::size_t max_violations) const {
  std::ostringstream out;
  out << jobs << " jobs (" << succeeded << " succeeded, " << dead << " dead; " << lost << " lost, "
      << double_completions << " completed twice), " << leases << " leases, " << executions
      << " executions, " << accepted_completions << " accepted completions, "
      << rejected_completions << " refused completions, " << unknown_completions
      << " completions of unknown outcome (" << completed_by_unknown << " jobs completed only so), "
      << reclaimed_from_killed << " reclaimed from killed processes, " << unrecorded_completions
      << " completions and " << unrecorded_settles << " fails or releases a killed process did "
      << "not record";
  if (enqueues_acknowledged + enqueues_refused + enqueues_unknown > 0) {
    out << "; enqueues: " << enqueues_acknowledged << " acknowledged, " << enqueues_refused
        << " refused, " << enqueues_unknown << " of unknown outcome (" << enqueues_unknown_committed
        << " committed)";
  }
  for (const auto& [kind, n] : settles_accepted) out << "; " << kind << " accepted " << n;
  for (const auto& [kind, n] : settles_refused) out << "; " << kind << " refused " << n;
  out << "; " << retries << " retries after a failure, " << duplicate_executions
      << " duplicate executions (" << overlapping_executions << " overlapping, "
      << executions_after_end << " after the job had ended)";
  for (const auto& [cause, n] : duplicate_causes) out << " " << cause << "=" << n;
  out << "; faults:";
  for (const auto& [kind, n] : faults) out << " " << kind << "=" << n;
  out << "; leases per job:";
  for (const auto& [count, n] : leases_per_job) out << " " << count << "x" << n;
  auto ms = [](Duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  out << "; slowest lease call " << ms(slowest_lease_call) << " ms, slowest complete call "
      << ms(slowest_complete_call) << " ms, " << calls_over_1s << " calls over 1 s";
  // Violations before the refusals, which are only context: a log cut short keeps them.
  out << "\n" << violations.size() << " violations";
  for (std::size_t i = 0; i < violations.size() && i < max_violations; ++i) {
    out << "\n  " << violations[i];
  }
  if (violations.size() > max_violations) {
    out << "\n  ... and " << violations.size() - max_violations << " more";
  }
  for (std::size_t i = 0; i < rejections.size() && i < max_violations; ++i) {
    out << "\n  refused: " << rejections[i];
  }
  return out.str();
}

std::string CheckReport::figures_json() const {
  nlohmann::json figures = {{"jobs", jobs},
                            {"succeeded", succeeded},
                            {"dead", dead},
                            {"lost", lost},
                            {"double_completions", double_completions},
                            {"violations", violations.size()},
                            {"leases", leases},
                            {"executions", executions},
                            {"retries", retries},
                            {"duplicate_executions", duplicate_executions},
                            {"overlapping_executions", overlapping_executions},
                            {"executions_after_end", executions_after_end},
                            {"duplicate_causes", duplicate_causes},
                            {"faults", faults},
                            {"accepted_completions", accepted_completions},
                            {"refused_completions", rejected_completions},
                            {"unknown_completions", unknown_completions},
                            {"settles_accepted", settles_accepted},
                            {"settles_refused", settles_refused},
                            {"enqueues_acknowledged", enqueues_acknowledged},
                            {"enqueues_refused", enqueues_refused},
                            {"enqueues_unknown", enqueues_unknown}};
  return figures.dump();
}

CheckReport check_history(const History& history, const std::vector<JobId>& enqueued,
                          const std::vector<Job>& final_jobs, const CheckOptions& options) {
  CheckReport report;
  auto violation = [&](std::string text) { report.violations.push_back(std::move(text)); };
  const Duration tol = options.clock_tolerance;

  for (const auto& bad : history.bad_lines) violation("unreadable history line " + bad);

  // Faults, and the killed processes whose time of death is not recorded.
  std::vector<FaultEvent> faults = history.faults;
  std::set<std::string> killed = options.killed_processes;
  for (const auto& f : history.faults) {
    ++report.faults[f.kind];
    if (f.kind == "sigkill" && !f.target.empty()) killed.insert(f.target);
  }
  for (const auto& process : options.killed_processes) {
    FaultEvent f;
    f.kind = "sigkill";
    f.target = process;
    f.t_start = TimePoint::min();
    f.t = TimePoint::max();
    faults.push_back(std::move(f));
    ++report.faults["sigkill"];
  }

  // Enqueues: the ids acknowledged, and the payloads whose enqueue was refused or may have
  // committed unseen.
  std::set<JobId> enqueued_set(enqueued.begin(), enqueued.end());
  if (enqueued_set.size() != enqueued.size()) violation("an id was returned by two enqueues");
  std::map<JobId, int> acknowledged;
  std::unordered_map<JobId, int> max_attempts_of;
  std::map<std::string, const EnqueueEvent*> unknown_payloads;
  std::map<std::string, const EnqueueEvent*> refused_payloads;
  for (const auto& e : history.enqueues) {
    if (e.accepted) {
      ++report.enqueues_acknowledged;
      if (++acknowledged[e.job] == 2) {
        violation("job " + std::to_string(e.job) + ": its id was returned by two enqueues");
      }
      enqueued_set.insert(e.job);
      max_attempts_of[e.job] = e.max_attempts;
    } else if (e.unknown) {
      ++report.enqueues_unknown;
      unknown_payloads[e.payload] = &e;
    } else {
      ++report.enqueues_refused;
      refused_payloads[e.payload] = &e;
    }
  }

  std::unordered_map<JobId, const Job*> final_by_id;
  for (const auto& job : final_jobs) final_by_id[job.id] = &job;

  // Every row must come from an enqueue: acknowledged, or of unknown outcome.
  std::set<JobId> known = enqueued_set;
  for (const auto& job : final_jobs) {
    if (enqueued_set.count(job.id)) continue;
    if (auto it = unknown_payloads.find(job.payload); it != unknown_payloads.end()) {
      ++report.enqueues_unknown_committed;
      known.insert(job.id);
    } else if (auto refused = refused_payloads.find(job.payload);
               refused != refused_payloads.end()) {
      violation("job " + std::to_string(job.id) + " is in the database although its enqueue " +
                "was refused (" + refused->second->error + ")");
    } else {
      violation("job " + std::to_string(job.id) + " is in the database but was never enqueued");
    }
  }
  report.jobs = static_cast<std::int64_t>(known.size());

  // Lost jobs: every known job ends succeeded, or dead with its attempts spent.
  for (JobId id : known) {
    auto it = final_by_id.find(id);
    if (it == final_by_id.end()) {
      ++report.lost;
      violation("job " + std::to_string(id) + " lost: not in the database");
      continue;
    }
    const Job& row = *it->second;
    if (row.state == JobState::kSucceeded) {
      ++report.succeeded;
    } else if (row.state == JobState::kDead && row.attempts >= row.max_attempts) {
      ++report.dead;
    } else {
      ++report.lost;
      std::string how =
          "job " + std::to_string(id) + " lost: it ended " + std::string(to_string(row.state));
      if (row.state == JobState::kDead) {
        how += " after " + std::to_string(row.attempts) + " of " +
               std::to_string(row.max_attempts) + " attempts";
        ++report.dead;
      }
      violation(how);
    }
  }

  // Black-box runs: leases and completions from the executions and the final rows.
  std::vector<LeaseEvent> synthesized_leases;
  std::vector<CompleteEvent> synthesized_completions;
  if (options.black_box) {
    synthesize_black_box(history, final_jobs, synthesized_leases, synthesized_completions);
  }
  const std::vector<LeaseEvent>& all_leases =
      options.black_box ? synthesized_leases : history.leases;
  const std::vector<CompleteEvent>& all_completions =
      options.black_box ? synthesized_completions : history.completions;

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
  for (const auto& lease : all_leases) {
    timed(lease.worker, lease.t_lease_start, lease.t_lease_end, report.slowest_lease_call);
  }
  for (const auto& c : all_completions) {
    timed(c.worker, c.t_start, c.t, report.slowest_complete_call);
  }
  for (const auto& lease : all_leases) {
    ++report.leases;
    by_job[lease.job].leases.push_back(&lease);
    if (!tokens_seen.insert(lease.token).second) {
      violation("token " + lease.token + " handed out twice (job " + std::to_string(lease.job) +
                ")");
    }
  }
  for (const auto& completion : all_completions) {
    by_job[completion.job].completions.push_back(&completion);
    if (completion.accepted) {
      ++report.accepted_completions;
    } else if (completion.unknown) {
      ++report.unknown_completions;
    } else {
      ++report.rejected_completions;
    }
  }
  for (const auto& s : history.settles) {
    by_job[s.job].settles.push_back(&s);
    const std::string kind(to_string(s.kind));
    if (s.accepted) {
      ++report.settles_accepted[kind];
    } else if (!s.unknown) {
      ++report.settles_refused[kind];
    }
  }
  for (const auto& e : history.execs) {
    auto& events = by_job[e.job];
    (e.phase == ExecEvent::Phase::kStart ? events.starts : events.ends).push_back(&e);
  }
  const bool executions_recorded = !history.execs.empty();

  for (auto& [id, events] : by_job) {
    const std::string job = "job " + std::to_string(id);
    if (!known.count(id)) {
      violation(job + " appears in the history but was never enqueued");
      continue;
    }
    const auto final_it = final_by_id.find(id);
    const Job* row = final_it != final_by_id.end() ? final_it->second : nullptr;
    int max_attempts = kDefaultMaxAttempts;
    if (row) {
      max_attempts = row->max_attempts;
    } else if (auto m = max_attempts_of.find(id); m != max_attempts_of.end()) {
      max_attempts = m->second;
    }

    auto& leases = events.leases;
    // Grant order: every lease adds an attempt (a release gives one back), so attempts order
    // the grants; the database's expiry and then the call windows break ties.
    std::sort(leases.begin(), leases.end(), [](const LeaseEvent* a, const LeaseEvent* b) {
      if (a->attempt != b->attempt) return a->attempt < b->attempt;
      if (a->lease_expires_at != b->lease_expires_at) {
        return a->lease_expires_at < b->lease_expires_at;
      }
      return a->t_lease_start < b->t_lease_start;
    });
    report.leases_per_job[static_cast<int>(leases.size())]++;

    std::map<std::string, std::size_t> index_of_token;
    for (std::size_t i = 0; i < leases.size(); ++i) index_of_token[leases[i]->token] = i;

    // A delivery beyond max attempts.
    for (const auto* lease : leases) {
      if (lease->attempt > max_attempts) {
        violation(job + " delivered beyond its max attempts: attempt " +
                  std::to_string(lease->attempt) + " of " + std::to_string(max_attempts) +
                  " leased by " + lease->worker + " at " + t(lease->t_lease_end));
      }
    }

    // Accepted completions: at most one, with the latest lease's token.
    std::vector<const CompleteEvent*> accepted;
    for (const auto* c : events.completions) {
      if (c->accepted) accepted.push_back(c);
    }
    if (accepted.size() > 1) {
      ++report.double_completions;
      std::string who;
      for (const auto* c : accepted) who += " " + c->worker + "@" + t(c->t);
      violation(job + " completed " + std::to_string(accepted.size()) + " times:" + who);
    }
    for (const auto* c : accepted) {
      auto it = index_of_token.find(c->token);
      if (it == index_of_token.end()) {
        violation(job + " completed by " + c->worker + " with token " + c->token +
                  " that no recorded lease carried");
      } else if (it->second + 1 != leases.size()) {
        violation(job + " completed by " + c->worker + " with the token of its lease expiring " +
                  t(leases[it->second]->lease_expires_at) + ", but " + leases.back()->worker +
                  " held a later lease (granted by " + t(leases.back()->t_lease_end) + ")");
      }
    }

    // Accepted fail, extend and release calls: their token must be the current lease's.
    std::vector<const SettleEvent*> accepted_settles;
    for (const auto* s : events.settles) {
      if (!s->accepted) continue;
      accepted_settles.push_back(s);
      const std::string kind(to_string(s->kind));
      auto it = index_of_token.find(s->token);
      if (it == index_of_token.end()) {
        violation(job + ": " + kind + " by " + s->worker + " accepted with token " + s->token +
                  " that no recorded lease carried");
        continue;
      }
      for (std::size_t k = it->second + 1; k < leases.size(); ++k) {
        if (leases[k]->t_lease_end + tol < s->t_start) {
          violation(job + ": " + kind + " by " + s->worker + " called at " + t(s->t_start) +
                    " accepted with a stale token: " + leases[k]->worker +
                    " held a later lease (granted by " + t(leases[k]->t_lease_end) + ")");
          break;
        }
      }
    }

    // Terminal events: an accepted completion, an accepted fail to dead. Nothing may
    // change the job after them.
    std::optional<TimePoint> terminal_at;
    std::string terminal_what;
    for (const auto* c : accepted) {
      if (!terminal_at || c->t < *terminal_at) {
        terminal_at = c->t;
        terminal_what = "its completion was accepted";
      }
    }
    for (const auto* s : accepted_settles) {
      if (s->kind == SettleEvent::Kind::kFail && s->outcome == "dead" &&
          (!terminal_at || s->t < *terminal_at)) {
        terminal_at = s->t;
        terminal_what = "it was failed to dead";
      }
    }
    if (terminal_at) {
      for (const auto* lease : leases) {
        if (lease->t_lease_start > *terminal_at + tol) {
          violation(job + " leased by " + lease->worker + " at " + t(lease->t_lease_start) +
                    " after " + terminal_what + " at " + t(*terminal_at));
        }
      }
      for (const auto* s : accepted_settles) {
        if (s->t_start > *terminal_at + tol) {
          violation(job + ": " + std::string(to_string(s->kind)) + " by " + s->worker +
                    " accepted at " + t(s->t_start) + " after " + terminal_what + " at " +
                    t(*terminal_at));
        }
      }
      for (const auto* c : accepted) {
        if (c->t_start > *terminal_at + tol) {
          violation(job + ": a completion by " + c->worker + " accepted at " + t(c->t_start) +
                    " after " + terminal_what + " at " + t(*terminal_at));
        }
      }
      // Running it again is no state change: a stale worker cannot know that its lease is
      // gone until a call tells it so. Such runs count as duplicate executions.
      for (const auto* e : events.starts) {
        if (e->t > *terminal_at + tol) ++report.executions_after_end;
      }
      if (row) {
        const bool completed = !accepted.empty();
        const JobState expected = completed ? JobState::kSucceeded : JobState::kDead;
        if (row->state != expected) {
          violation(job + " ended " + std::string(to_string(row->state)) + " although " +
                    terminal_what);
        }
      }
    }

    for (const auto* c : events.completions) {
      if (c->accepted || c->unknown || report.rejections.size() >= 10) continue;
      auto it = index_of_token.find(c->token);
      std::string text = job + ": completion by " + c->worker + " called at " + t(c->t_start) +
                         ", returned at " + t(c->t) + ", refused (" + c->error + ")";
      if (it != index_of_token.end()) {
        const LeaseEvent* lease = leases[it->second];
        text += "; its lease was granted in [" + t(lease->t_lease_start) + ", " +
                t(lease->t_lease_end) + "] and expired at " + t(lease->lease_expires_at);
      }
      report.rejections.push_back(std::move(text));
    }

    // No two leases valid at once. Lease j lasted at least until its expiry (or a later
    // one an accepted extension set) unless a settling call ended it first: an accepted
    // one, or a fail or release of unknown outcome (the database may have committed it and
    // lost only the reply, say in a server crash, and the job was available again; a
    // completion of unknown outcome cannot explain a later lease: had it committed, the job
    // would have ended). Lease i was granted no later than its call returned. Overlap is
    // proven when lease i's call returned before lease j ended.
    auto settled_by = [&](const std::string& token, SettleEvent::Kind kind) {
      for (const auto* s : accepted_settles) {
        if (s->token == token && s->kind == kind) return s;
      }
      return static_cast<const SettleEvent*>(nullptr);
    };
    std::map<std::string, const ExecEvent*> ended_run;  // token -> its exec_end
    for (const auto* e : events.ends) ended_run.emplace(e->token, e);
    // Releases a killed process committed but did not live to record: the next grant
    // carries the same attempt, since a release gives the attempt back and nothing else
    // does (only the token's holder can release; a rescue or a fail leaves the attempt
    // spent, so the next grant adds one).
    std::int64_t unrecorded_releases = 0;
    for (std::size_t j = 0; j + 1 < leases.size(); ++j) {
      // A killed process may have settled its lease (a fail, a release) without living to
      // record it: when it had finished running the job, or the next grant shows the job
      // was released, and no answer of its is recorded, the job may have been free again
      // at any time, and lease j proves nothing.
      const std::string& token = leases[j]->token;
      const bool answered =
          std::any_of(events.completions.begin(), events.completions.end(),
                      [&](const auto* c) { return c->token == token; }) ||
          std::any_of(events.settles.begin(), events.settles.end(), [&](const auto* s) {
            return s->token == token && s->kind != SettleEvent::Kind::kExtend;
          });
      const bool released_unrecorded = leases[j + 1]->attempt == leases[j]->attempt;
      if (killed.count(leases[j]->process) && !answered &&
          (!executions_recorded || ended_run.count(token) || released_unrecorded)) {
        unrecorded_releases += released_unrecorded;
        if (released_unrecorded || leases[j + 1]->t_lease_end + tol < leases[j]->lease_expires_at) {
          ++report.unrecorded_settles;
        }
        continue;
      }
      TimePoint j_end = leases[j]->lease_expires_at;
      for (const auto* s : accepted_settles) {
        if (s->token == leases[j]->token && s->kind == SettleEvent::Kind::kExtend) {
          j_end = std::max(j_end, s->t_start + s->lease_duration);
        }
      }
      for (const auto* c : accepted) {
        if (c->token == leases[j]->token) j_end = std::min(j_end, c->t_start);
      }
      for (const auto* s : events.settles) {
        if (s->token == leases[j]->token && (s->accepted || s->unknown) &&
            s->kind != SettleEvent::Kind::kExtend) {
          j_end = std::min(j_end, s->t_start);
        }
      }
      for (std::size_t i = j + 1; i < leases.size(); ++i) {
        if (leases[i]->t_lease_end + tol < j_end) {
          violation(job + ": lease by " + leases[i]->worker + " granted by " +
                    t(leases[i]->t_lease_end) + " while the lease by " + leases[j]->worker +
                    " was valid until " + t(j_end));
        }
      }
    }

    // Executions, retries and duplicate executions, each duplicate with its cause.
    std::map<std::string, const ExecEvent*> start_of_token;
    std::map<std::string, const ExecEvent*> end_of_token;
    for (const auto* e : events.starts) {
      start_of_token.emplace(e->token, e);
      if (!options.black_box && !index_of_token.count(e->token)) {
        violation(job + " executed by " + e->worker + " with token " + e->token +
                  " that no recorded lease carried");
      }
    }
    for (const auto* e : events.ends) end_of_token.emplace(e->token, e);
    std::vector<const LeaseEvent*> executed;
    for (const auto* lease : leases) {
      if (!executions_recorded || start_of_token.count(lease->token)) executed.push_back(lease);
    }
    report.executions += static_cast<std::int64_t>(executed.size());
    for (std::size_t k = 0; k + 1 < executed.size(); ++k) {
      const LeaseEvent* prev = executed[k];
      const LeaseEvent* next = executed[k + 1];
      // A run after a failure is a retry.
      const auto end = end_of_token.find(prev->token);
      const bool failed_run = options.black_box
                                  ? end != end_of_token.end() && end->second->result != "ok"
                                  : settled_by(prev->token, SettleEvent::Kind::kFail) != nullptr;
      if (failed_run) {
        ++report.retries;
        continue;
      }
      ++report.duplicate_executions;
      const auto next_start = start_of_token.find(next->token);
      if (end != end_of_token.end() && next_start != start_of_token.end() &&
          end->second->t > next_start->second->t) {
        ++report.overlapping_executions;
      }
      std::string cause;
      // The fault must have struck while prev's lease was held: from its grant to the next
      // grant. A black-box run knows the grant only as the command's start, which may come
      // after the fault (a worker killed as it started the command): no lower bound there.
      const TimePoint held_from = options.black_box ? TimePoint::min() : prev->t_lease_start - tol;
      auto hit = [&](const FaultEvent& f, bool targeted) {
        if (targeted ? f.target != prev->process : !f.target.empty()) return false;
        return f.t_start <= next->t_lease_end + tol && f.t >= held_from;
      };
      for (bool targeted : {true, false}) {
        for (const auto& f : faults) {
          if (cause.empty() && hit(f, targeted)) cause = "fault:" + f.kind;
        }
      }
      auto settles_of_prev = [&](auto&& pred) {
        for (const auto* c : events.completions) {
          if (c->token == prev->token && pred(c->accepted, c->unknown)) return true;
        }
        for (const auto* s : events.settles) {
          if (s->token == prev->token && pred(s->accepted, s->unknown)) return true;
        }
        return false;
      };
      if (cause.empty() && settled_by(prev->token, SettleEvent::Kind::kRelease)) {
        cause = "released";
      }
      if (cause.empty() && settles_of_prev([](bool, bool unknown) { return unknown; })) {
        cause = "outage";
      }
      if (cause.empty() && settles_of_prev([](bool ok, bool unknown) { return !ok && !unknown; })) {
        cause = "late worker";
      }
      if (cause.empty()) {
        cause = "unexplained";
        if (options.require_explained_duplicates) {
          violation(job + " ran again (lease by " + next->worker + " granted by " +
                    t(next->t_lease_end) + ") after the lease by " + prev->worker + " granted by " +
                    t(prev->t_lease_end) +
                    " with no fault, release, outage or refused call to explain it");
        }
      }
      ++report.duplicate_causes[cause];
    }

    // Reclaimed from a killed process: its lease followed by another process's.
    for (std::size_t i = 0; i + 1 < leases.size(); ++i) {
      if (killed.count(leases[i]->process) && leases[i + 1]->process != leases[i]->process) {
        ++report.reclaimed_from_killed;
        break;
      }
    }

    if (row) {
      std::int64_t releases = 0;
      for (const auto* s : accepted_settles) releases += s->kind == SettleEvent::Kind::kRelease;
      const auto granted =
          static_cast<std::int64_t>(leases.size()) - releases - unrecorded_releases;
      if (!options.black_box && row->attempts < granted) {
        violation(job + " has attempts " + std::to_string(row->attempts) + " after " +
                  std::to_string(leases.size()) + " recorded leases" +
                  (releases > 0 ? " and " + std::to_string(releases) + " releases" : ""));
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
      if (row->state == JobState::kSucceeded && accepted.empty()) {
        if (unknown_latest) {
          ++report.completed_by_unknown;
        } else if (!leases.empty() && killed.count(leases.back()->process)) {
          ++report.unrecorded_completions;
        } else if (!unknown.empty()) {
          violation(job +
                    " succeeded, its completions are all of unknown outcome, and none "
                    "carried the token of its latest recorded lease (by " +
                    (leases.empty() ? std::string("nobody") : leases.back()->worker) + ")");
        } else if (!leases.empty()) {
          violation(job + " succeeded without any accepted completion in the history");
        }
      }
    }
  }

  // Succeeded jobs nobody was seen leasing.
  for (JobId id : known) {
    auto it = final_by_id.find(id);
    if (it != final_by_id.end() && it->second->state == JobState::kSucceeded &&
        (!by_job.count(id) || by_job[id].leases.empty())) {
      violation("job " + std::to_string(id) + " succeeded but no lease of it was recorded");
    }
  }
  if (options.running_limit) check_running_limit(history, options, &report.violations);
  if (options.rate_limit) check_rate_limit(history, options, &report.violations);
  return report;
}

void check_dependencies(const History& history, const std::vector<Job>& final_jobs,
                        const std::map<JobId, std::vector<JobId>>& after, Duration tolerance,
                        CheckReport& report) {
  std::map<JobId, const Job*> rows;
  for (const Job& job : final_jobs) rows[job.id] = &job;
  // When the accepted completion of each job was sent: the earliest, should there be several
  // (a second one is a violation of check_history's).
  std::map<JobId, TimePoint> completion_sent;
  for (const CompleteEvent& completion : history.completions) {
    if (!completion.accepted) continue;
    auto [it, inserted] = completion_sent.emplace(completion.job, completion.t_start);
    if (!inserted) it->second = std::min(it->second, completion.t_start);
  }
  auto violation = [&](JobId dependent, const std::string& what) {
    report.violations.push_back("job " + std::to_string(dependent) + " (a dependent): " + what);
  };
  for (const auto& [dependent, dependencies] : after) {
    auto row = rows.find(dependent);
    if (row == rows.end()) {
      violation(dependent, "is missing from the final rows");
      continue;
    }
    const Job& job = *row->second;
    bool all_succeeded = true;
    for (JobId dependency : dependencies) {
      auto dep = rows.find(dependency);
      if (dep == rows.end()) {
        violation(dependent, "its dependency " + std::to_string(dependency) + " is missing");
        all_succeeded = false;
        continue;
      }
      const Job& done = *dep->second;
      if (done.state != JobState::kSucceeded) all_succeeded = false;
      if (done.state == JobState::kSucceeded && done.finished_at && job.started_at &&
          *job.started_at + tolerance < *done.finished_at) {
        violation(dependent, "started at " + format_time(*job.started_at) +
                                 ", before its dependency " + std::to_string(dependency) +
                                 " finished at " + format_time(*done.finished_at));
      }
      // A command (black box: exec events only) started before the dependency finished.
      if (done.state == JobState::kSucceeded && done.finished_at) {
        for (const ExecEvent& exec : history.execs) {
          if (exec.job != dependent || exec.phase != ExecEvent::Phase::kStart) continue;
          if (exec.t + tolerance < *done.finished_at) {
            violation(dependent, "ran (" + exec.worker + ", at " + format_time(exec.t) +
                                     ") before its dependency " + std::to_string(dependency) +
                                     " finished at " + format_time(*done.finished_at));
          }
        }
      }
      auto sent = completion_sent.find(dependency);
      for (const LeaseEvent& lease : history.leases) {
        if (lease.job != dependent) continue;
        if (sent == completion_sent.end()) {
          // Leased although no worker's completion of the dependency was accepted: only a
          // completion nobody recorded (a killed worker's) could explain it.
          if (done.state != JobState::kSucceeded) {
            violation(dependent, "leased by " + lease.worker + " although its dependency " +
                                     std::to_string(dependency) + " never succeeded");
          }
          continue;
        }
        if (lease.t_lease_end + tolerance < sent->second) {
          violation(dependent, "leased by " + lease.worker + " (returned at " +
                                   format_time(lease.t_lease_end) + ") before the completion of " +
                                   "its dependency " + std::to_string(dependency) +
                                   " was sent at " + format_time(sent->second));
        }
      }
    }
    if (all_succeeded && job.state != JobState::kSucceeded) {
      violation(dependent, std::string("ended ") + std::string(to_string(job.state)) +
                               " although every dependency succeeded");
    }
    if (!all_succeeded && job.state != JobState::kCancelled) {
      violation(dependent, std::string("ended ") + std::string(to_string(job.state)) +
                               " although a dependency did not succeed");
    }
  }
}

int check_running_limit(const History& history, const CheckOptions& options,
                        std::vector<std::string>* violations) {
  std::set<std::string> killed = options.killed_processes;
  for (const auto& f : history.faults) {
    if (f.kind == "sigkill" && !f.target.empty()) killed.insert(f.target);
  }
  // By lease token: when its settling call began, and whether its run started and ended.
  std::unordered_map<std::string, TimePoint> settled_at;
  auto note_settle = [&](const std::string& token, TimePoint t) {
    auto [it, inserted] = settled_at.emplace(token, t);
    if (!inserted) it->second = std::min(it->second, t);
  };
  for (const auto& c : history.completions) note_settle(c.token, c.t_start);
  for (const auto& s : history.settles) {
    if (s.kind != SettleEvent::Kind::kExtend) note_settle(s.token, s.t_start);
  }
  std::set<std::string> started, ended;
  for (const auto& e : history.execs) {
    (e.phase == ExecEvent::Phase::kStart ? started : ended).insert(e.token);
  }
  struct Edge {
    TimePoint t;
    int delta;
    JobId job;
  };
  std::vector<Edge> edges;
  for (const auto& lease : history.leases) {
    TimePoint end{};
    if (auto it = settled_at.find(lease.token); it != settled_at.end()) {
      end = it->second;
    } else if (killed.contains(lease.process) && started.contains(lease.token) &&
               !ended.contains(lease.token) && lease.lease_expires_at != TimePoint{}) {
      end = lease.lease_expires_at - options.clock_tolerance;
    } else {
      continue;
    }
    if (end <= lease.t_lease_end) continue;
    edges.push_back({lease.t_lease_end, +1, lease.job});
    edges.push_back({end, -1, lease.job});
  }
  // At one instant, ends before starts: a job settled at t no longer runs at t.
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t != b.t ? a.t < b.t : a.delta < b.delta;
  });
  std::set<JobId> running;
  int most = 0;
  int reported = 0;
  for (const auto& edge : edges) {
    if (edge.delta < 0) {
      running.erase(edge.job);
      continue;
    }
    running.insert(edge.job);
    most = std::max(most, static_cast<int>(running.size()));
    if (violations && static_cast<int>(running.size()) > *options.running_limit && reported < 5) {
      ++reported;
      std::string jobs;
      for (JobId id : running) jobs += (jobs.empty() ? "" : ", ") + std::to_string(id);
      violations->push_back(std::to_string(running.size()) + " jobs certainly running at " +
                            format_time(edge.t) + ", over the running limit of " +
                            std::to_string(*options.running_limit) + ": jobs " + jobs);
    }
  }
  return most;
}

int check_rate_limit(const History& history, const CheckOptions& options,
                     std::vector<std::string>* violations) {
  std::vector<const LeaseEvent*> leases;
  for (const LeaseEvent& lease : history.leases) leases.push_back(&lease);
  std::sort(leases.begin(), leases.end(), [](const LeaseEvent* a, const LeaseEvent* b) {
    return a->t_lease_start < b->t_lease_start;
  });
  const Duration window = options.rate_limit->window;
  int most = 0;
  int reported = 0;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    const TimePoint from = leases[i]->t_lease_start;
    const TimePoint to = from + window - options.clock_tolerance;
    int inside = 0;
    for (std::size_t j = i; j < leases.size() && leases[j]->t_lease_start <= to; ++j) {
      if (leases[j]->t_lease_end <= to) ++inside;
    }
    most = std::max(most, inside);
    if (violations && inside > options.rate_limit->count && reported < 5) {
      ++reported;
      violations->push_back(std::to_string(inside) + " leases within " + format_time(from) + " + " +
                            format_duration(window) + ", over the rate limit of " +
                            std::to_string(options.rate_limit->count));
    }
  }
  return most;
}

}  // namespace readpast::test
