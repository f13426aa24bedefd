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

TEST(HistoryFile, RoundTripsEveryFieldAndSkipsATornLastLine) {
  TempDir dir;
  const std::string path = dir.file("history.jsonl");
  CleanRun run;
  {
    HistoryWriter writer(path);
    for (const auto& e : run.history.leases) writer.record(e);
    for (const auto& e : run.history.completions) writer.record(e);
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
