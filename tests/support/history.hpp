// Histories of fault tests (Jepsen-style), and the checker that judges them.
//
// Each process of a run appends what it saw to its own file, one JSON object per line:
//   {"type":"enqueue","job":7,"payload":"job-7","process":"test","accepted":true,
//    "max_attempts":25,"t_start":…,"t":…}
//   {"type":"lease","job":7,"token":"…","process":"p1","worker":"p1/t0","attempt":1,
//    "t_lease_start":…,"t_lease_end":…,"lease_expires_at":…}
//   {"type":"exec_start","job":7,"token":"…","process":"p1","worker":"p1/t0","attempt":1,
//    "pid":123,"t":…}
//   {"type":"exec_end", … same …, "result":"ok"}   ("ok", "exit 3", "signal 11")
//   {"type":"complete","job":7,"token":"…","process":"p1","worker":"p1/t0",
//    "accepted":true,"t_start":…,"t":…}
//   {"type":"fail"|"extend"|"release", … like complete …, "outcome":"retrying"|"dead",
//    "lease_us":…}   (outcome: an accepted fail; lease_us: the extension asked for)
//   {"type":"fault","kind":"sigkill","target":"p3","t_start":…,"t":…,"detail":"…"}
// "accepted" is null when the caller cannot know the outcome: a call whose reply was lost
// (the database became unavailable) and whose re-send was refused as lease lost may have
// committed the first time; an enqueue answered kUnavailable may have committed.
// A fault is what the test injected (a signal to a process, a server restart, a network
// fault, a clock jump, a full disk); its target is the process it hit, or "" when it hit
// every process (the server, the network). Faults are what explain duplicate executions.
// Times are microseconds since the Unix epoch: t_* from the writer's wall clock (before and
// after the call), lease_expires_at from the database. Lines are written whole and flushed
// one by one, so a process killed with SIGKILL leaves every line it finished (a torn last
// line is skipped by the reader).
//
// The checker reads every file, the ids that were enqueued and the final rows, and fails on
//   - an acknowledged job that ended neither succeeded nor dead with its attempts spent
//     (lost); a row that no enqueue acknowledged nor may have committed (never enqueued);
//     an enqueue that reported a definite error, yet its row exists (false failure);
//   - more than one accepted completion of a job;
//   - two leases of one job valid at the same time: a lease must be granted after the
//     previous one expired (extensions included) or was settled (completed, failed,
//     released) — unless the previous holder was killed after running the job and before
//     recording its answer (its settling call may have committed unseen);
//   - an accepted completion whose token was not the job's latest lease's, or an accepted
//     fail, extend or release with the token of a lease that a later one had replaced;
//   - a state change after a terminal state: a lease or an accepted settling call after the
//     job's completion or its fail to dead was accepted; a final row whose state contradicts
//     that terminal event (a stale worker may still run the job: that is a duplicate
//     execution, counted, not a state change);
//   - a delivery beyond max attempts (a lease whose attempt exceeds max_attempts);
//   - a succeeded job without any recorded lease, or with fewer attempts than leases that
//     were not released;
//   - a duplicate execution that nothing explains (see below).
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
//
// Executions. A job runs once per lease (mp_worker), or once per exec_start event when the
// history has them. A run after an accepted fail is a retry, not a duplicate. Any other
// second run is a duplicate execution, which at-least-once delivery allows; each one is
// explained by what ended the lease before it, in this order:
//   "fault:KIND"   an injected fault hit that lease's process (or everything) while the
//                  lease was held (from its grant to the next lease's grant);
//   "released"     the holder released the job after it started running it (shutdown);
//   "outage"       the holder's completion had an unknown outcome;
//   "late worker"  the lease expired while its holder was alive: the holder's settling
//                  call came too late and was refused as lease lost (no fault injected);
// anything else is "unexplained", a violation unless CheckOptions says otherwise.
//
// Black-box runs (`readpast work --exec` with a command that records exec_start/exec_end):
// there are no lease or settle events; each exec_start stands for a lease (its expiry
// unknown, so the overlap rule cannot apply), and the final row's lease token tells which
// execution's completion was accepted. A fault explains a duplicate there if it struck the
// process before the next run began (the lease's grant is not known).
//
// Thread-safety: HistoryWriter may be shared by threads; the rest are plain functions.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/job.hpp"
#include "readpast/options.hpp"
#include "readpast/time.hpp"

namespace readpast::test {

// An enqueue as its caller saw it. accepted: acknowledged with an id; unknown: answered
// kUnavailable (it may have committed); neither: refused with a definite error.
struct EnqueueEvent {
  JobId job = 0;        // the id, when acknowledged
  std::string payload;  // the test's key for the job (text; matched against the rows)
  std::string process;
  bool accepted = false;
  bool unknown = false;
  std::string error;
  int max_attempts = kDefaultMaxAttempts;
  TimePoint t_start{};
  TimePoint t{};
};

struct LeaseEvent {
  JobId job = 0;
  std::string token;
  std::string process;  // the worker process, e.g. "p1"
  std::string worker;   // the thread that leased, e.g. "p1/t0" (also its worker id)
  int attempt = 0;
  TimePoint t_lease_start{};     // wall clock just before the lease call
  TimePoint t_lease_end{};       // wall clock just after it returned
  TimePoint lease_expires_at{};  // as the database set it (the epoch when unknown)
};

// A job's handler (or command) starting or ending.
struct ExecEvent {
  enum class Phase { kStart, kEnd };
  Phase phase = Phase::kStart;
  JobId job = 0;
  std::string token;
  std::string process;
  std::string worker;
  int attempt = 0;
  long pid = 0;        // the process that ran it
  std::string result;  // kEnd: "ok", "exit N", "signal N"
  TimePoint t{};
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

// fail, extend and release: the other fenced calls.
struct SettleEvent {
  enum class Kind { kFail, kExtend, kRelease };
  Kind kind = Kind::kFail;
  JobId job = 0;
  std::string token;
  std::string process;
  std::string worker;
  bool accepted = false;
  bool unknown = false;  // as for CompleteEvent
  std::string error;
  std::string outcome;        // an accepted fail: "retrying" or "dead"
  Duration lease_duration{};  // extend: the new lease's length
  TimePoint t_start{};
  TimePoint t{};
};

// Something the test did to the run.
struct FaultEvent {
  std::string kind;    // "sigkill", "sigstop", "restart", "proxy_reset", "clock_jump", …
  std::string target;  // the process it hit; "" when it hit every process
  std::string detail;
  TimePoint t_start{};  // when it began
  TimePoint t{};        // when it ended (== t_start for an instant fault)
};

std::string_view to_string(SettleEvent::Kind kind) noexcept;

// Appends events to one file (O_APPEND, one write(2) per line).
class HistoryWriter {
 public:
  // Throws std::system_error when the file cannot be opened.
  explicit HistoryWriter(const std::string& path);
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  // Throw std::system_error when the line cannot be written.
  void record(const EnqueueEvent& event);
  void record(const LeaseEvent& event);
  void record(const ExecEvent& event);
  void record(const CompleteEvent& event);
  void record(const SettleEvent& event);
  void record(const FaultEvent& event);

 private:
  void write_line(const std::string& line);
  std::mutex mu_;
  int fd_ = -1;  // guarded by mu_ for writes
};

struct History {
  std::vector<EnqueueEvent> enqueues;
  std::vector<LeaseEvent> leases;
  std::vector<ExecEvent> execs;
  std::vector<CompleteEvent> completions;
  std::vector<SettleEvent> settles;
  std::vector<FaultEvent> faults;
  // Lines that could not be read, other than a torn last line ("file:line: why").
  std::vector<std::string> bad_lines;
  std::int64_t torn_lines = 0;
};

// Adds the events of one history file to `history`. Throws std::system_error when the
// file cannot be read.
void read_history_file(const std::string& path, History& history);

std::string to_json_line(const EnqueueEvent& event);
std::string to_json_line(const LeaseEvent& event);
std::string to_json_line(const ExecEvent& event);
std::string to_json_line(const CompleteEvent& event);
std::string to_json_line(const SettleEvent& event);
std::string to_json_line(const FaultEvent& event);

struct CheckOptions {
  // Allowance for comparing the database's clock (lease_expires_at) with the workers' wall
  // clocks: both run on this machine, but each reads its clock at a slightly different
  // instant than the one it stands for, and the database may round.
  Duration clock_tolerance = std::chrono::milliseconds(50);
  // Processes killed mid-run at a time not recorded: a job they completed may lack the
  // line that says so, and they explain the duplicate executions of the leases they held.
  // (The targets of "sigkill" fault events count as killed too.)
  std::set<std::string> killed_processes;
  // A duplicate execution that nothing explains is a violation. Default: true.
  bool require_explained_duplicates = true;
  // The history has exec events but no lease or settle events (`readpast work --exec`).
  bool black_box = false;
  // The queue's global running limit (docs/workflows.md "Global limits"): at no instant may
  // more jobs be certainly running (see check_running_limit). Unset: not checked.
  std::optional<int> running_limit;
  // The queue's global rate limit: in no window of `window` may more than `count` leases
  // certainly have been taken (see check_rate_limit). Unset: not checked.
  std::optional<RateLimit> rate_limit;
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
  // Enqueues: acknowledged, refused, of unknown outcome (and of those, how many committed).
  std::int64_t enqueues_acknowledged = 0;
  std::int64_t enqueues_refused = 0;
  std::int64_t enqueues_unknown = 0;
  std::int64_t enqueues_unknown_committed = 0;
  // Fail, extend and release calls: accepted and refused (lease lost), by kind.
  std::map<std::string, std::int64_t> settles_accepted;
  std::map<std::string, std::int64_t> settles_refused;
  // Executions (exec_start events, or leases when the history has none), runs after an
  // accepted fail, and duplicate executions: extra runs of one job, by cause (see above).
  std::int64_t executions = 0;
  std::int64_t retries = 0;
  std::int64_t duplicate_executions = 0;
  std::map<std::string, std::int64_t> duplicate_causes;
  // Duplicate executions that began while the run before them was still going (a command
  // orphaned by a killed worker, a stopped worker's handler).
  std::int64_t overlapping_executions = 0;
  // Executions that began after the job's completion or fail to dead was accepted (by a
  // worker that had not yet learnt that its lease was gone).
  std::int64_t executions_after_end = 0;
  // How many leases each job had: leases per job → number of jobs.
  std::map<int, std::int64_t> leases_per_job;
  // Final states.
  std::int64_t succeeded = 0;
  std::int64_t dead = 0;
  // The headline figures: jobs lost, and jobs completed more than once.
  std::int64_t lost = 0;
  std::int64_t double_completions = 0;
  // Faults injected, by kind.
  std::map<std::string, std::int64_t> faults;
  // Jobs whose lease by a killed process was followed by another process's lease.
  std::int64_t reclaimed_from_killed = 0;
  // Succeeded jobs whose accepted completion a killed process did not get to record, and
  // leases of killed processes that were followed by another before they expired: the
  // process had run the job and must have settled it (fail, release) unrecorded.
  std::int64_t unrecorded_completions = 0;
  std::int64_t unrecorded_settles = 0;

  // How long the workers' calls took (wall clock), the slowest of each kind, and how many
  // calls took over a second: a lease shorter than that can expire before its completion.
  Duration slowest_lease_call{0};
  Duration slowest_complete_call{0};
  std::int64_t calls_over_1s = 0;
  // The first few refused completions, described (not violations: a lease may expire
  // before its worker completes, and then fencing must refuse the late completion).
  std::vector<std::string> rejections;

  bool ok() const { return violations.empty(); }
  // Counts and up to `max_violations` violations, for a test's failure message.
  std::string summary(std::size_t max_violations = 25) const;
  // The figures as one JSON object (for scripts/reliability.sh).
  std::string figures_json() const;
};

CheckReport check_history(const History& history, const std::vector<JobId>& enqueued,
                          const std::vector<Job>& final_jobs, const CheckOptions& options = {});

// The rules of dependencies (docs/workflows.md) over a run, added to report.violations.
// `after` maps each dependent to the jobs it was enqueued after. For every dependent:
//   - it ends succeeded when every one of its dependencies did (none is left waiting, and
//     none is cancelled by a dependency that succeeded), and cancelled when one ended dead
//     or cancelled;
//   - it is never leased before the accepted completion of each dependency was sent: a
//     lease call that returned (t_lease_end) before that completion's call began (t_start)
//     would have handed out a job whose dependency had not succeeded yet;
//   - its last start (the database's started_at) is at or after each dependency's finish.
//   - none of its commands started (exec events, the black box's only view) before each
//     dependency finished.
// Times from the workers' clocks and the database's are compared with `tolerance`.
void check_dependencies(const History& history, const std::vector<Job>& final_jobs,
                        const std::map<JobId, std::vector<JobId>>& after, Duration tolerance,
                        CheckReport& report);
// The running-limit rule (check_history applies it when options.running_limit is set): the
// most jobs certainly running at one instant, by the workers' clocks. A lease's job is
// certainly running from the moment its lease call returned until its settling call
// (complete, fail, release) began; for a lease of a killed process that started the job and
// recorded neither its end nor a settle, until its lease expired (less the clock tolerance):
// it could not have settled it, and only a rescue, after expiry, frees its place. A lease
// whose end is unknown otherwise is not counted. Violations name the instant and the jobs.
int check_running_limit(const History& history, const CheckOptions& options,
                        std::vector<std::string>* violations);

// The rate-limit rule (check_history applies it when options.rate_limit is set): the most
// leases certainly taken within one window of the rate's length. A lease (one per job) was
// taken by the database at some instant between its call's start and end (t_lease_start,
// t_lease_end, the workers' clocks); it is certainly within [a, a + window] when both are, less
// the clock tolerance at the end. Every window that starts at a lease's start is tried.
int check_rate_limit(const History& history, const CheckOptions& options,
                     std::vector<std::string>* violations);

// Microseconds since the epoch <-> TimePoint, the form times take in history files.
std::int64_t to_micros(TimePoint t);
TimePoint from_micros(std::int64_t micros);
TimePoint wall_now();

}  // namespace readpast::test
