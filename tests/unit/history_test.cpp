// The multi-process history checker, on hand-made histories: it must pass a correct run
// and catch each kind of violation it promises to catch.
#include "support/history.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

const TimePoint kT0 = from_micros(1'800'000'000'000'000);
constexpr Duration kLease = 2s;

LeaseEvent lease_at(JobId job, std::string token, std::string worker, Duration at,
                    int attempt = 1) {
  LeaseEvent e;
  e.job = job;
  e.token = std::move(token);
  e.process = worker.substr(0, worker.find('/'));
  e.worker = std::move(worker);
  e.attempt = attempt;
  e.t_lease_start = kT0 + at;
  e.t_lease_end = kT0 + at + 2ms;
  e.lease_expires_at = kT0 + at + 1ms + kLease;
  return e;
}

CompleteEvent complete_at(JobId job, std::string token, std::string worker, Duration at,
                          bool accepted = true) {
  CompleteEvent e;
  e.job = job;
  e.token = std::move(token);
  e.process = worker.substr(0, worker.find('/'));
  e.worker = std::move(worker);
  e.accepted = accepted;
  if (!accepted) e.error = "lease_lost: not the current lease";
  e.t_start = kT0 + at;
  e.t = kT0 + at + 1ms;
  return e;
}

Job final_row(JobId id, JobState state, int attempts = 1) {
  Job job;
  job.id = id;
  job.queue = "q";
  job.state = state;
  job.attempts = attempts;
  return job;
}

bool mentions(const CheckReport& report, const std::string& text) {
  for (const auto& v : report.violations) {
    if (v.find(text) != std::string::npos) return true;
  }
  return false;
}

// Job 1 done once; job 2's first lease expired, its second lease completed it.
struct CleanRun {
  History history;
  std::vector<JobId> enqueued = {1, 2};
  std::vector<Job> final_jobs = {final_row(1, JobState::kSucceeded),
                                 final_row(2, JobState::kSucceeded, 2)};
  CleanRun() {
    history.leases = {lease_at(1, "t1", "a/t0", 0ms), lease_at(2, "t2a", "a/t1", 0ms),
                      lease_at(2, "t2b", "b/t0", 2500ms, 2)};
    history.completions = {complete_at(1, "t1", "a/t0", 100ms),
                           complete_at(2, "t2a", "a/t1", 3000ms, false),
                           complete_at(2, "t2b", "b/t0", 2600ms)};
  }
};

TEST(HistoryChecker, PassesACorrectRunAndCountsDuplicateExecutions) {
  CleanRun run;
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.jobs, 2);
  EXPECT_EQ(report.leases, 3);
  EXPECT_EQ(report.accepted_completions, 2);
  EXPECT_EQ(report.rejected_completions, 1);
  EXPECT_EQ(report.duplicate_executions, 1);
  EXPECT_EQ(report.leases_per_job, (std::map<int, std::int64_t>{{1, 1}, {2, 1}}));
}

TEST(HistoryChecker, CatchesALostJob) {
  CleanRun run;
  run.enqueued.push_back(3);
  run.final_jobs.push_back(final_row(3, JobState::kAvailable, 0));
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "job 3 lost")) << report.summary();

  CleanRun missing;
  missing.enqueued.push_back(4);
  report = check_history(missing.history, missing.enqueued, missing.final_jobs);
  EXPECT_TRUE(mentions(report, "job 4 lost")) << report.summary();

  CleanRun dead;
  dead.final_jobs[0].state = JobState::kDead;
  report = check_history(dead.history, dead.enqueued, dead.final_jobs);
  EXPECT_TRUE(mentions(report, "job 1 lost: it ended dead")) << report.summary();
}

TEST(HistoryChecker, CatchesAJobThatWasNeverEnqueued) {
  CleanRun run;
  run.history.leases.push_back(lease_at(99, "t99", "a/t0", 500ms));
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "job 99 appears in the history but was never enqueued"))
      << report.summary();

  CleanRun extra_row;
  extra_row.final_jobs.push_back(final_row(77, JobState::kSucceeded));
  report = check_history(extra_row.history, extra_row.enqueued, extra_row.final_jobs);
  EXPECT_TRUE(mentions(report, "job 77 is in the database but was never enqueued"))
      << report.summary();
}

TEST(HistoryChecker, CatchesTwoAcceptedCompletions) {
  CleanRun run;
  run.history.completions.push_back(complete_at(1, "t1", "a/t0", 200ms));
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "job 1 completed 2 times")) << report.summary();
}

TEST(HistoryChecker, CatchesOverlappingLeases) {
  CleanRun run;
  // b leased job 2 at +1s, while a's lease ran until +2s.
  run.history.leases[2] = lease_at(2, "t2b", "b/t0", 1000ms, 2);
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "job 2: lease by b/t0")) << report.summary();
}

TEST(HistoryChecker, ToleratesClockSkewWithinTheTolerance) {
  CleanRun run;
  // b's call returned 30 ms (by its clock) before a's lease expired (by the database's).
  run.history.leases[2] = lease_at(2, "t2b", "b/t0", kLease - 33ms, 2);
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(report.ok()) << report.summary();
  // 100 ms is not skew.
  run.history.leases[2] = lease_at(2, "t2b", "b/t0", kLease - 103ms, 2);
  report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_FALSE(report.ok());
}

TEST(HistoryChecker, CatchesACompletionAcceptedWithAStaleToken) {
  CleanRun run;
  // a's completion with its expired token was accepted although b held the job.
  run.history.completions[1].accepted = true;
  run.history.completions[1].error.clear();
  run.history.completions[2].accepted = false;
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "job 2 completed by a/t1 with the token of its lease"))
      << report.summary();
}

TEST(HistoryChecker, CatchesACompletionWithAnUnknownToken) {
  CleanRun run;
  run.history.completions[0].token = "forged";
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "that no recorded lease carried")) << report.summary();
}

TEST(HistoryChecker, CatchesALeaseAfterAnAcceptedCompletion) {
  CleanRun run;
  run.history.leases.push_back(lease_at(1, "t1-again", "b/t1", 5000ms, 2));
  run.final_jobs[0].attempts = 2;
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "after its completion was accepted")) << report.summary();
}

TEST(HistoryChecker, CatchesATokenHandedOutTwice) {
  CleanRun run;
  run.history.leases[2].token = "t2a";
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "handed out twice")) << report.summary();
}

TEST(HistoryChecker, CatchesAttemptsThatDoNotCountEveryLease) {
  CleanRun run;
  run.final_jobs[1].attempts = 1;
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  EXPECT_TRUE(mentions(report, "has attempts 1 after 2 recorded leases")) << report.summary();
}

TEST(HistoryChecker, ForgivesAKilledProcessItsUnrecordedCompletionOnly) {
  History history;
  history.leases = {lease_at(1, "t1", "victim/t0", 0ms)};
  std::vector<JobId> enqueued = {1};
  std::vector<Job> final_jobs = {final_row(1, JobState::kSucceeded)};
  auto report = check_history(history, enqueued, final_jobs);
  EXPECT_TRUE(mentions(report, "succeeded without any accepted completion")) << report.summary();
  CheckOptions options;
  options.killed_processes = {"victim"};
  report = check_history(history, enqueued, final_jobs, options);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.unrecorded_completions, 1);
}

TEST(HistoryChecker, CountsJobsReclaimedFromAKilledProcess) {
  History history;
  history.leases = {lease_at(1, "t1a", "victim/t0", 0ms), lease_at(1, "t1b", "b/t0", 2100ms, 2)};
  history.completions = {complete_at(1, "t1b", "b/t0", 2200ms)};
  CheckOptions options;
  options.killed_processes = {"victim"};
  auto report = check_history(history, {1}, {final_row(1, JobState::kSucceeded, 2)}, options);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.reclaimed_from_killed, 1);
}

TEST(HistoryChecker, CatchesASucceededJobNobodyLeased) {
  History history;
  auto report = check_history(history, {1}, {final_row(1, JobState::kSucceeded)});
  EXPECT_TRUE(mentions(report, "no lease of it was recorded")) << report.summary();
}

// --- enqueues, settling calls, executions and faults ---

SettleEvent settle_at(SettleEvent::Kind kind, JobId job, std::string token, std::string worker,
                      Duration at, bool accepted = true) {
  SettleEvent e;
  e.kind = kind;
  e.job = job;
  e.token = std::move(token);
  e.process = worker.substr(0, worker.find('/'));
  e.worker = std::move(worker);
  e.accepted = accepted;
  if (!accepted) e.error = "lease_lost";
  if (kind == SettleEvent::Kind::kExtend) e.lease_duration = kLease;
  e.t_start = kT0 + at;
  e.t = kT0 + at + 1ms;
  return e;
}

ExecEvent exec_at(ExecEvent::Phase phase, JobId job, std::string token, std::string worker,
                  Duration at, std::string result = "ok", int attempt = 1) {
  ExecEvent e;
  e.phase = phase;
  e.job = job;
  e.token = std::move(token);
  e.process = worker.substr(0, worker.find('/'));
  e.worker = std::move(worker);
  e.attempt = attempt;
  e.pid = 4242;
  if (phase == ExecEvent::Phase::kEnd) e.result = std::move(result);
  e.t = kT0 + at;
  return e;
}

FaultEvent fault_at(std::string kind, std::string target, Duration at) {
  FaultEvent f;
  f.kind = std::move(kind);
  f.target = std::move(target);
  f.t_start = kT0 + at;
  f.t = kT0 + at;
  return f;
}

EnqueueEvent enqueue_of(JobId job, std::string payload, bool accepted = true,
                        bool unknown = false) {
  EnqueueEvent e;
  e.job = accepted ? job : 0;
  e.payload = std::move(payload);
  e.process = "test";
  e.accepted = accepted;
  e.unknown = unknown;
  if (!accepted) e.error = unknown ? "unavailable: reply lost" : "unavailable: disk is full";
  e.t_start = kT0 - 1s;
  e.t = kT0 - 1s + 1ms;
  return e;
}

Job row_with_payload(JobId id, JobState state, std::string payload) {
  Job job = final_row(id, state);
  job.payload = std::move(payload);
  return job;
}

// One job, leased once, completed once.
History one_clean_job(JobId id = 1) {
  History h;
  h.leases = {lease_at(id, "t" + std::to_string(id), "a/t0", 0ms)};
  h.completions = {complete_at(id, "t" + std::to_string(id), "a/t0", 100ms)};
  return h;
}

TEST(HistoryChecker, EnqueueEventsNameTheJobsThatMustNotBeLost) {
  History h = one_clean_job();
  h.enqueues = {enqueue_of(1, "a"), enqueue_of(2, "b")};
  auto report = check_history(h, {}, {row_with_payload(1, JobState::kSucceeded, "a")});
  EXPECT_TRUE(mentions(report, "job 2 lost: not in the database")) << report.summary();
  EXPECT_EQ(report.lost, 1);
  EXPECT_EQ(report.enqueues_acknowledged, 2);
}

TEST(HistoryChecker, AnEnqueueOfUnknownOutcomeMayHaveCommitted) {
  History h = one_clean_job(7);
  h.enqueues = {enqueue_of(0, "maybe", false, true)};
  auto report = check_history(h, {}, {row_with_payload(7, JobState::kSucceeded, "maybe")});
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.enqueues_unknown, 1);
  EXPECT_EQ(report.enqueues_unknown_committed, 1);
  EXPECT_EQ(report.jobs, 1);
}

TEST(HistoryChecker, CatchesARefusedEnqueueWhoseRowExists) {
  History h;
  h.enqueues = {enqueue_of(0, "refused", false)};
  auto report = check_history(h, {}, {row_with_payload(3, JobState::kAvailable, "refused")});
  EXPECT_TRUE(mentions(report, "job 3 is in the database although its enqueue was refused"))
      << report.summary();
  EXPECT_EQ(report.enqueues_refused, 1);
}

TEST(HistoryChecker, CatchesAnIdReturnedByTwoEnqueues) {
  History h = one_clean_job();
  h.enqueues = {enqueue_of(1, "a"), enqueue_of(1, "b")};
  auto report = check_history(h, {}, {row_with_payload(1, JobState::kSucceeded, "a")});
  EXPECT_TRUE(mentions(report, "returned by two enqueues")) << report.summary();
}

TEST(HistoryChecker, DeadIsAnEndOnlyOnceTheAttemptsAreSpent) {
  History h;
  h.leases = {lease_at(1, "a", "a/t0", 0ms, 1), lease_at(1, "b", "a/t0", 200ms, 2)};
  h.settles = {settle_at(SettleEvent::Kind::kFail, 1, "a", "a/t0", 100ms),
               settle_at(SettleEvent::Kind::kFail, 1, "b", "a/t0", 300ms)};
  h.settles[0].outcome = "retrying";
  h.settles[1].outcome = "dead";
  Job dead = final_row(1, JobState::kDead, 2);
  dead.max_attempts = 2;
  auto report = check_history(h, {1}, {dead});
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.dead, 1);
  EXPECT_EQ(report.retries, 1);
  EXPECT_EQ(report.duplicate_executions, 0);

  dead.max_attempts = 3;
  report = check_history(h, {1}, {dead});
  EXPECT_TRUE(mentions(report, "job 1 lost: it ended dead after 2 of 3 attempts"))
      << report.summary();
}

TEST(HistoryChecker, CatchesADeliveryBeyondMaxAttempts) {
  History h;
  h.leases = {lease_at(1, "a", "a/t0", 0ms, 1), lease_at(1, "b", "a/t0", 200ms, 2),
              lease_at(1, "c", "a/t0", 400ms, 3)};
  h.settles = {settle_at(SettleEvent::Kind::kFail, 1, "a", "a/t0", 100ms),
               settle_at(SettleEvent::Kind::kFail, 1, "b", "a/t0", 300ms)};
  h.completions = {complete_at(1, "c", "a/t0", 500ms)};
  Job row = final_row(1, JobState::kSucceeded, 3);
  row.max_attempts = 2;
  auto report = check_history(h, {1}, {row});
  EXPECT_TRUE(mentions(report, "delivered beyond its max attempts: attempt 3 of 2"))
      << report.summary();
}

TEST(HistoryChecker, CatchesAStateChangeAfterATerminalState) {
  // Failed to dead, then extended and leased again.
  History h;
  h.leases = {lease_at(1, "a", "a/t0", 0ms), lease_at(1, "b", "b/t0", 500ms, 2)};
  h.settles = {settle_at(SettleEvent::Kind::kFail, 1, "a", "a/t0", 100ms),
               settle_at(SettleEvent::Kind::kExtend, 1, "b", "b/t0", 600ms)};
  h.settles[0].outcome = "dead";
  Job row = final_row(1, JobState::kDead, 2);
  row.max_attempts = 1;
  auto report = check_history(h, {1}, {row});
  EXPECT_TRUE(mentions(report, "after it was failed to dead")) << report.summary();
  EXPECT_TRUE(mentions(report, "extend by b/t0 accepted at")) << report.summary();

  // Completed, then executed again (no state change), and the row says dead (one).
  History done = one_clean_job();
  done.execs = {exec_at(ExecEvent::Phase::kStart, 1, "t1", "a/t0", 10ms),
                exec_at(ExecEvent::Phase::kStart, 1, "t1", "a/t0", 400ms)};
  report = check_history(done, {1}, {final_row(1, JobState::kDead)});
  EXPECT_EQ(report.executions_after_end, 1) << report.summary();
  EXPECT_TRUE(mentions(report, "job 1 ended dead although its completion was accepted"))
      << report.summary();
}

TEST(HistoryChecker, CatchesAFailAcceptedWithAStaleToken) {
  // b leased the job after a's lease expired; a's fail with the old token was accepted.
  History h;
  h.leases = {lease_at(1, "a", "a/t0", 0ms), lease_at(1, "b", "b/t0", 2500ms, 2)};
  h.settles = {settle_at(SettleEvent::Kind::kFail, 1, "a", "a/t0", 3000ms)};
  h.settles[0].outcome = "retrying";
  h.completions = {complete_at(1, "b", "b/t0", 3100ms)};
  auto report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(mentions(report, "fail by a/t0 called at")) << report.summary();
  EXPECT_TRUE(mentions(report, "accepted with a stale token")) << report.summary();
}

TEST(HistoryChecker, AnAcceptedExtensionKeepsTheLeaseValid) {
  // a extended its lease at +1.5s by 2s (to +3.5s); b's lease at +2.5s overlaps it.
  History h;
  h.leases = {lease_at(1, "a", "a/t0", 0ms), lease_at(1, "b", "b/t0", 2500ms, 2)};
  h.settles = {settle_at(SettleEvent::Kind::kExtend, 1, "a", "a/t0", 1500ms)};
  h.completions = {complete_at(1, "b", "b/t0", 2600ms)};
  auto report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(mentions(report, "job 1: lease by b/t0")) << report.summary();
  // A refused extension does not.
  h.settles[0].accepted = false;
  h.settles[0].error = "lease_lost";
  report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(report.ok()) << report.summary();
}

TEST(HistoryChecker, AFailOfUnknownOutcomeMayHaveEndedTheLease) {
  // a's fail at +1s lost its reply (a server crash): it may have committed, making the job
  // available, so b's lease at +1.5s, inside a's lease, proves no overlap.
  History h;
  h.leases = {lease_at(1, "a", "a/t0", 0ms), lease_at(1, "b", "b/t0", 1500ms, 2)};
  h.settles = {settle_at(SettleEvent::Kind::kFail, 1, "a", "a/t0", 1000ms)};
  h.settles[0].accepted = false;
  h.settles[0].unknown = true;
  h.settles[0].error = "unavailable: server closed the connection";
  h.completions = {complete_at(1, "b", "b/t0", 1600ms)};
  auto report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(report.ok()) << report.summary();
  // A refused fail did not end it: then b's lease overlaps a's.
  h.settles[0].unknown = false;
  h.settles[0].error = "lease_lost";
  report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(mentions(report, "job 1: lease by b/t0")) << report.summary();
}

TEST(HistoryChecker, AReleaseEndsTheLeaseAndGivesItsAttemptBack) {
  History h;
  h.leases = {lease_at(1, "a", "a/t0", 0ms, 1), lease_at(1, "b", "b/t0", 300ms, 1)};
  h.execs = {exec_at(ExecEvent::Phase::kStart, 1, "a", "a/t0", 10ms),
             exec_at(ExecEvent::Phase::kEnd, 1, "a", "a/t0", 190ms, "signal 15"),
             exec_at(ExecEvent::Phase::kStart, 1, "b", "b/t0", 310ms),
             exec_at(ExecEvent::Phase::kEnd, 1, "b", "b/t0", 320ms)};
  h.settles = {settle_at(SettleEvent::Kind::kRelease, 1, "a", "a/t0", 200ms)};
  h.completions = {complete_at(1, "b", "b/t0", 330ms)};
  auto report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 1)});
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.duplicate_executions, 1);
  EXPECT_EQ(report.duplicate_causes, (std::map<std::string, std::int64_t>{{"released", 1}}));
}

TEST(HistoryChecker, ExplainsEachDuplicateExecutionByWhatEndedTheLeaseBeforeIt) {
  // Three jobs leased twice each (the first lease expired): a killed holder, a server
  // restart, and a holder whose late completion was refused.
  History h;
  for (JobId id : {1, 2, 3}) {
    const std::string first = "p" + std::to_string(id) + "/t0";
    h.leases.push_back(lease_at(id, std::to_string(id) + "a", first, 0ms));
    h.leases.push_back(lease_at(id, std::to_string(id) + "b", "z/t0", 2500ms, 2));
    h.completions.push_back(complete_at(id, std::to_string(id) + "b", "z/t0", 2600ms));
  }
  h.completions.push_back(complete_at(3, "3a", "p3/t0", 2700ms, false));
  h.faults = {fault_at("sigkill", "p1", 500ms), fault_at("restart", "", 1000ms),
              fault_at("sigkill", "p9", 1000ms)};
  std::vector<Job> rows = {final_row(1, JobState::kSucceeded, 2),
                           final_row(2, JobState::kSucceeded, 2),
                           final_row(3, JobState::kSucceeded, 2)};
  auto report = check_history(h, {1, 2, 3}, rows);
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.duplicate_executions, 3);
  // The restart hit everyone: job 3's holder is explained by it too (faults come first).
  EXPECT_EQ(report.duplicate_causes,
            (std::map<std::string, std::int64_t>{{"fault:restart", 2}, {"fault:sigkill", 1}}));
  EXPECT_EQ(report.faults, (std::map<std::string, std::int64_t>{{"restart", 1}, {"sigkill", 2}}));

  // Without the restart, job 2 is unexplained and job 3's holder was late.
  h.faults.erase(h.faults.begin() + 1);
  report = check_history(h, {1, 2, 3}, rows);
  EXPECT_TRUE(mentions(report, "job 2 ran again")) << report.summary();
  EXPECT_EQ(report.duplicate_causes,
            (std::map<std::string, std::int64_t>{
                {"fault:sigkill", 1}, {"late worker", 1}, {"unexplained", 1}}));
  CheckOptions lenient;
  lenient.require_explained_duplicates = false;
  EXPECT_TRUE(check_history(h, {1, 2, 3}, rows, lenient).ok());
}

TEST(HistoryChecker, ALeaseThatNeverRanIsNoDuplicateExecution) {
  // The killed process leased job 1 but died before running it.
  History h;
  h.leases = {lease_at(1, "a", "p1/t0", 0ms), lease_at(1, "b", "p2/t0", 2500ms, 2)};
  h.execs = {exec_at(ExecEvent::Phase::kStart, 1, "b", "p2/t0", 2510ms),
             exec_at(ExecEvent::Phase::kEnd, 1, "b", "p2/t0", 2520ms)};
  h.completions = {complete_at(1, "b", "p2/t0", 2530ms)};
  auto report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.executions, 1);
  EXPECT_EQ(report.duplicate_executions, 0);
}

TEST(HistoryChecker, CountsOverlappingExecutionsAndCatchesAnExecutionWithoutALease) {
  // A stopped holder's handler was still running when the next holder started.
  History h;
  h.leases = {lease_at(1, "a", "p1/t0", 0ms), lease_at(1, "b", "p2/t0", 2500ms, 2)};
  h.execs = {exec_at(ExecEvent::Phase::kStart, 1, "a", "p1/t0", 10ms),
             exec_at(ExecEvent::Phase::kStart, 1, "b", "p2/t0", 2510ms),
             exec_at(ExecEvent::Phase::kEnd, 1, "b", "p2/t0", 2520ms),
             exec_at(ExecEvent::Phase::kEnd, 1, "a", "p1/t0", 4000ms)};
  h.completions = {complete_at(1, "b", "p2/t0", 2530ms),
                   complete_at(1, "a", "p1/t0", 4010ms, false)};
  h.faults = {fault_at("sigstop", "p1", 100ms)};
  auto report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.overlapping_executions, 1);
  EXPECT_EQ(report.duplicate_causes, (std::map<std::string, std::int64_t>{{"fault:sigstop", 1}}));

  h.execs.push_back(exec_at(ExecEvent::Phase::kStart, 1, "forged", "p3/t0", 100ms));
  report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(mentions(report, "with token forged that no recorded lease carried"))
      << report.summary();
}

TEST(HistoryChecker, BlackBoxRunsAreJudgedByExecutionsAndFinalRows) {
  // Job 1 failed once (exit 1) then succeeded; job 2 ran twice because its worker was
  // killed; job 3 ran twice with nothing to explain it.
  History h;
  auto run = [&](JobId id, const std::string& token, const std::string& worker, Duration at,
                 const std::string& result, int attempt) {
    h.execs.push_back(exec_at(ExecEvent::Phase::kStart, id, token, worker, at, "", attempt));
    h.execs.push_back(
        exec_at(ExecEvent::Phase::kEnd, id, token, worker, at + 10ms, result, attempt));
  };
  run(1, "1a", "p1/s0", 0ms, "exit 1", 1);
  run(1, "1b", "p1/s0", 100ms, "ok", 2);
  run(2, "2a", "p2/s0", 0ms, "ok", 1);
  run(2, "2b", "p1/s0", 3000ms, "ok", 2);
  run(3, "3a", "p1/s0", 0ms, "ok", 1);
  run(3, "3b", "p1/s0", 3000ms, "ok", 2);
  h.faults = {fault_at("sigkill", "p2", 20ms)};
  auto row = [](JobId id, const std::string& token) {
    Job job = final_row(id, JobState::kSucceeded, 2);
    job.lease_token = LeaseToken::from_hex(std::string(32, '0')).value();
    if (!token.empty()) job.lease_token = LeaseToken::from_hex(token).value();
    return job;
  };
  const std::string t1b(32, 'b'), t2b(32, 'c'), t3b(32, 'd');
  for (auto& e : h.execs) {
    if (e.token == "1b") e.token = t1b;
    if (e.token == "2b") e.token = t2b;
    if (e.token == "3b") e.token = t3b;
  }
  CheckOptions options;
  options.black_box = true;
  auto report = check_history(h, {1, 2, 3}, {row(1, t1b), row(2, t2b), row(3, t3b)}, options);
  EXPECT_EQ(report.accepted_completions, 3) << report.summary();
  EXPECT_EQ(report.retries, 1);
  EXPECT_EQ(report.executions, 6);
  EXPECT_EQ(report.duplicate_causes,
            (std::map<std::string, std::int64_t>{{"fault:sigkill", 1}, {"unexplained", 1}}));
  ASSERT_EQ(report.violations.size(), 1u) << report.summary();
  EXPECT_TRUE(mentions(report, "job 3 ran again")) << report.summary();
}

TEST(HistoryChecker, AKilledProcessMayHaveSettledALeaseWithoutRecordingIt) {
  // victim ran job 1, failed it (committed) and was killed before writing the line; b
  // leased the job at once, long before the victim's lease would have expired.
  History h;
  h.leases = {lease_at(1, "a", "victim/t0", 0ms), lease_at(1, "b", "b/t0", 300ms, 2)};
  h.execs = {exec_at(ExecEvent::Phase::kStart, 1, "a", "victim/t0", 10ms),
             exec_at(ExecEvent::Phase::kEnd, 1, "a", "victim/t0", 20ms, "exit 1"),
             exec_at(ExecEvent::Phase::kStart, 1, "b", "b/t0", 310ms),
             exec_at(ExecEvent::Phase::kEnd, 1, "b", "b/t0", 320ms)};
  h.completions = {complete_at(1, "b", "b/t0", 330ms)};
  h.faults = {fault_at("sigkill", "victim", 25ms)};
  auto report = check_history(h, {1}, {final_row(1, JobState::kSucceeded, 2)});
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.unrecorded_settles, 1);
  // Not when it was killed before the run ended (it sent nothing), nor when it lived.
  History mid_run = h;
  mid_run.execs.erase(mid_run.execs.begin() + 1);
  EXPECT_TRUE(mentions(check_history(mid_run, {1}, {final_row(1, JobState::kSucceeded, 2)}),
                       "job 1: lease by b/t0"));
  History alive = h;
  alive.faults.clear();
  EXPECT_TRUE(mentions(check_history(alive, {1}, {final_row(1, JobState::kSucceeded, 2)}),
                       "job 1: lease by b/t0"));
}

TEST(HistoryChecker, AKilledProcessMayHaveReleasedALeaseWithoutRecordingIt) {
  // victim leased job 1, found its lease too short to start it, released it (committed:
  // the attempt came back) and was killed before writing the line; b leased attempt 1
  // again, once at once and once after the victim's lease would have expired.
  for (Duration b_at : {300ms, 2500ms}) {
    History h;
    h.leases = {lease_at(1, "a", "victim/t0", 0ms), lease_at(1, "b", "b/t0", b_at, 1)};
    h.execs = {exec_at(ExecEvent::Phase::kStart, 1, "b", "b/t0", b_at + 10ms),
               exec_at(ExecEvent::Phase::kEnd, 1, "b", "b/t0", b_at + 20ms)};
    h.completions = {complete_at(1, "b", "b/t0", b_at + 30ms)};
    h.faults = {fault_at("sigkill", "victim", 25ms)};
    const std::vector<Job> final_jobs = {final_row(1, JobState::kSucceeded, 1)};
    auto report = check_history(h, {1}, final_jobs);
    EXPECT_TRUE(report.ok()) << report.summary();
    EXPECT_EQ(report.unrecorded_settles, 1);
    // A process that lived would have recorded its release: the history is then short of
    // an attempt.
    History alive = h;
    alive.faults.clear();
    EXPECT_TRUE(mentions(check_history(alive, {1}, final_jobs), "has attempts 1 after 2"));
  }
}

TEST(HistoryChecker, FiguresNameTheHeadlineNumbers) {
  CleanRun run;
  run.history.completions.push_back(complete_at(1, "t1", "a/t0", 200ms));
  auto report = check_history(run.history, run.enqueued, run.final_jobs);
  const std::string figures = report.figures_json();
  EXPECT_NE(figures.find("\"double_completions\":1"), std::string::npos) << figures;
  EXPECT_NE(figures.find("\"lost\":0"), std::string::npos) << figures;
}

TEST(HistoryFile, RoundTripsEveryFieldAndSkipsATornLastLine) {
  TempDir dir;
  const std::string path = dir.file("history.jsonl");
  CleanRun run;
  {
    HistoryWriter writer(path);
    for (const auto& e : run.history.leases) writer.record(e);
    for (const auto& e : run.history.completions) writer.record(e);
  }
  History extra;
  extra.enqueues = {enqueue_of(1, "a"), enqueue_of(0, "b", false, true), enqueue_of(0, "c", false)};
  extra.execs = {exec_at(ExecEvent::Phase::kStart, 1, "t1", "a/t0", 10ms),
                 exec_at(ExecEvent::Phase::kEnd, 1, "t1", "a/t0", 20ms, "signal 9")};
  extra.settles = {settle_at(SettleEvent::Kind::kFail, 1, "t1", "a/t0", 30ms),
                   settle_at(SettleEvent::Kind::kExtend, 1, "t1", "a/t0", 40ms, false),
                   settle_at(SettleEvent::Kind::kRelease, 1, "t1", "a/t0", 50ms)};
  extra.settles[0].outcome = "dead";
  extra.settles[2].unknown = true;
  extra.faults = {fault_at("restart", "", 60ms)};
  extra.faults[0].detail = "pg_ctl restart -m immediate";
  {
    HistoryWriter writer(path);
    for (const auto& e : extra.enqueues) writer.record(e);
    for (const auto& e : extra.execs) writer.record(e);
    for (const auto& e : extra.settles) writer.record(e);
    for (const auto& e : extra.faults) writer.record(e);
  }
  {
    std::ofstream append(path, std::ios::app);
    append << R"({"type":"lease","job":5,"tok)";  // killed mid-line
  }
  History read;
  read_history_file(path, read);
  EXPECT_EQ(read.torn_lines, 1);
  EXPECT_TRUE(read.bad_lines.empty());
  ASSERT_EQ(read.leases.size(), run.history.leases.size());
  ASSERT_EQ(read.completions.size(), run.history.completions.size());
  for (std::size_t i = 0; i < read.leases.size(); ++i) {
    EXPECT_EQ(to_json_line(read.leases[i]), to_json_line(run.history.leases[i]));
  }
  for (std::size_t i = 0; i < read.completions.size(); ++i) {
    EXPECT_EQ(to_json_line(read.completions[i]), to_json_line(run.history.completions[i]));
  }
  EXPECT_EQ(read.completions[1].error, "lease_lost: not the current lease");
  ASSERT_EQ(read.enqueues.size(), extra.enqueues.size());
  ASSERT_EQ(read.execs.size(), extra.execs.size());
  ASSERT_EQ(read.settles.size(), extra.settles.size());
  ASSERT_EQ(read.faults.size(), extra.faults.size());
  for (std::size_t i = 0; i < read.enqueues.size(); ++i) {
    EXPECT_EQ(to_json_line(read.enqueues[i]), to_json_line(extra.enqueues[i]));
  }
  for (std::size_t i = 0; i < read.execs.size(); ++i) {
    EXPECT_EQ(to_json_line(read.execs[i]), to_json_line(extra.execs[i]));
  }
  for (std::size_t i = 0; i < read.settles.size(); ++i) {
    EXPECT_EQ(to_json_line(read.settles[i]), to_json_line(extra.settles[i]));
  }
  EXPECT_EQ(to_json_line(read.faults[0]), to_json_line(extra.faults[0]));
  EXPECT_TRUE(read.enqueues[1].unknown);
  EXPECT_TRUE(read.settles[2].unknown);
  EXPECT_EQ(read.settles[1].lease_duration, kLease);
  EXPECT_EQ(read.leases[2].lease_expires_at, run.history.leases[2].lease_expires_at);
}

TEST(HistoryFile, ReportsAMalformedLineInTheMiddle) {
  TempDir dir;
  const std::string path = dir.file("history.jsonl");
  {
    std::ofstream out(path);
    out << to_json_line(lease_at(1, "t", "a/t0", 0ms)) << "\n"
        << "not json\n"
        << R"({"type":"lease","job":2})"
        << "\n";
  }
  History read;
  read_history_file(path, read);
  EXPECT_EQ(read.leases.size(), 1u);
  EXPECT_EQ(read.bad_lines.size(), 2u);
  auto report = check_history(read, {1}, {final_row(1, JobState::kSucceeded)});
  EXPECT_TRUE(mentions(report, "unreadable history line")) << report.summary();
}

}  // namespace
}  // namespace readpast::test
