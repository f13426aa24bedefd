// Histories of multi-process runs, and the checker that judges them.
//
// Each worker process appends what it saw to its own file, one JSON object per line:
//   {"type":"lease","job":7,"token":"…","process":"p1","worker":"p1/t0","attempt":1,
//    "t_lease_start":…,"t_lease_end":…,"lease_expires_at":…}
//   {"type":"complete","job":7,"token":"…","process":"p1","worker":"p1/t0",
//    "accepted":true,"t_start":…,"t":…}
// "accepted" is null when the worker cannot know the outcome: a completion whose reply was
// lost (the database became unavailable) and whose re-send was refused as lease lost may
// have committed the first time.
// Times are microseconds since the Unix epoch: t_* from the worker's wall clock (before and
// after the call), lease_expires_at from the database. Lines are written whole and flushed
// one by one, so a process killed with SIGKILL leaves every line it finished (a torn last
// line is skipped by the reader).
//
// The checker reads every file, the ids that were enqueued and the final rows, and fails on
//   - an enqueued job that did not end succeeded (lost), or a job that was never enqueued;
//   - more than one accepted completion of a job;
//   - two leases of one job valid at the same time: a lease must be granted after the
//     previous one expired or was completed;
//   - an accepted completion whose token was not the job's latest lease's;
//   - a job leased again after its completion was accepted;
//   - a succeeded job without any recorded lease, or with fewer attempts than leases.
// Outages (the database unavailable, e.g. restarted, mid-run) leave two kinds of gaps:
//   - a completion of unknown outcome (see above). A succeeded job whose only completions
//     are of unknown outcome counts as completed once (by one of them: fencing lets at most
//     one token through); one of them must carry the job's latest recorded lease's token,
//     since an earlier token cannot succeed once a later lease was granted. An unknown
//     completion never ends a lease early for the overlap rule, and a lease after it is no
//     violation (it tells that the completion did not commit).
//   - an invisible lease: a lease call that failed (unavailable) may have committed without
//     its worker knowing; the job comes back once that lease expires. Such leases are not
//     in the history, so attempts may exceed the recorded leases, and no rule assumes that
//     consecutive recorded leases were consecutive grants.
// It counts duplicate executions (jobs leased more than once), which the delivery guarantee
// allows, jobs reclaimed from killed processes, and completions of unknown outcome.
//
// Thread-safety: HistoryWriter may be shared by threads; the rest are plain functions.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "readpast/job.hpp"
#include "readpast/time.hpp"

namespace readpast::test {

struct LeaseEvent {
  JobId job = 0;
  std::string token;
  std::string process;  // the worker process, e.g. "p1"
  std::string worker;   // the thread that leased, e.g. "p1/t0" (also its worker id)
  int attempt = 0;
  TimePoint t_lease_start{};     // wall clock just before the lease call
  TimePoint t_lease_end{};       // wall clock just after it returned
  TimePoint lease_expires_at{};  // as the database set it
};

struct CompleteEvent {
  JobId job = 0;
  std::string token;
  std::string process;
  std::string worker;
  bool accepted = false;
  // The outcome is unknown (accepted is then false): the reply to a first send was lost,
  // and the re-send with the same token was refused (lease lost).
  bool unknown = false;
  std::string error;    // why it was not accepted ("lease_lost: …"), empty when accepted
  TimePoint t_start{};  // wall clock just before the complete call
  TimePoint t{};        // wall clock just after it returned
};

// Appends events to one file (O_APPEND, one write(2) per line).
class HistoryWriter {
 public:
  // Throws std::system_error when the file cannot be opened.
  explicit HistoryWriter(const std::string& path);
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  // Throw std::system_error when the line cannot be written.
  void record(const LeaseEvent& event);
  void record(const CompleteEvent& event);

 private:
  void write_line(const std::string& line);
  std::mutex mu_;
  int fd_ = -1;  // guarded by mu_ for writes
};

struct History {
  std::vector<LeaseEvent> leases;
  std::vector<CompleteEvent> completions;
  // Lines that could not be read, other than a torn last line ("file:line: why").
  std::vector<std::string> bad_lines;
  std::int64_t torn_lines = 0;
};

// Adds the events of one history file to `history`. Throws std::system_error when the
// file cannot be read.
void read_history_file(const std::string& path, History& history);

std::string to_json_line(const LeaseEvent& event);
std::string to_json_line(const CompleteEvent& event);

struct CheckOptions {
  // Allowance for comparing the database's clock (lease_expires_at) with the workers' wall
  // clocks: both run on this machine, but each reads its clock at a slightly different
  // instant than the one it stands for, and the database may round.
  Duration clock_tolerance = std::chrono::milliseconds(50);
  // Processes killed mid-run: a job they completed may lack the line that says so.
  std::set<std::string> killed_processes;
};

struct CheckReport {
  std::vector<std::string> violations;
  std::int64_t jobs = 0;
  std::int64_t leases = 0;
  std::int64_t accepted_completions = 0;
  std::int64_t rejected_completions = 0;
  // Completions of unknown outcome (CompleteEvent::unknown), and the succeeded jobs that
  // have no accepted completion but some of unknown outcome (each counts as completed once).
  std::int64_t unknown_completions = 0;
  std::int64_t completed_by_unknown = 0;
  // Jobs leased more than once (each lease is one execution), and how many leases each
  // such job had: leases per job → number of jobs.
  std::int64_t duplicate_executions = 0;
  std::map<int, std::int64_t> leases_per_job;
  // Jobs whose lease by a killed process was followed by another process's lease.
  std::int64_t reclaimed_from_killed = 0;
  // Succeeded jobs whose accepted completion a killed process did not get to record.
  std::int64_t unrecorded_completions = 0;

  // How long the workers' calls took (wall clock), the slowest of each kind, and how many
  // calls took over a second: a lease shorter than that can expire before its completion.
  Duration slowest_lease_call{0};
  Duration slowest_complete_call{0};
  std::int64_t calls_over_1s = 0;
  // The first few rejected completions, described (not violations: a lease may expire
  // before its worker completes, and then fencing must reject the late completion).
  std::vector<std::string> rejections;

  bool ok() const { return violations.empty(); }
  // Counts and up to `max_violations` violations, for a test's failure message.
  std::string summary(std::size_t max_violations = 25) const;
};

CheckReport check_history(const History& history, const std::vector<JobId>& enqueued,
                          const std::vector<Job>& final_jobs, const CheckOptions& options = {});

// Microseconds since the epoch <-> TimePoint, the form times take in history files.
std::int64_t to_micros(TimePoint t);
TimePoint from_micros(std::int64_t micros);
TimePoint wall_now();

}  // namespace readpast::test
