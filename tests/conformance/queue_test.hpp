// The conformance suite's fixture and helpers: one fresh database per test, on every
// engine of support/engines.hpp. The suite states the semantics of docs/design.md
// "Operations"; an engine passes it or it is not an engine.
//
// Test names read like a specification: Conformance/QueueTest.<Behaviour>/<engine>.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <optional>
#include <ostream>
#include <source_location>
#include <stdexcept>
#include <string>
#include <vector>

#include "readpast/readpast.hpp"

namespace readpast {

// Readable gtest output for the library's enums.
inline void PrintTo(ErrorCode code, std::ostream* os) {
  *os << to_string(code);
}
inline void PrintTo(JobState state, std::ostream* os) {
  *os << to_string(state);
}
inline void PrintTo(FailOutcome outcome, std::ostream* os) {
  *os << (outcome == FailOutcome::kDead ? "dead" : "retrying");
}

namespace test {

using namespace std::chrono_literals;

// The database's clock decides run_at and lease expiry; the tests compare its times with
// this process's wall clock. Both engines run on this machine here, so the clocks are the
// same, but the database may read its clock at a slightly different instant than the call
// boundaries we bracket it with, and may round to the millisecond. 50 ms covers that and
// is far below every interval the tests distinguish (a second or more, or hours).
inline constexpr Duration kClockTolerance = std::chrono::milliseconds(50);

// A short lease for the tests that wait for leases to expire.
inline constexpr Duration kShortLease = std::chrono::milliseconds(300);

// How long a test waits for something that should happen "soon" before failing.
inline constexpr auto kPatience = std::chrono::seconds(10);

TimePoint now();

// Thrown by ok() on an error result: gtest reports it as a failure of the test, with the
// error and the line of the call.
class UnexpectedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_unexpected(const Error& error, const std::source_location& where);

// The value of a result that must succeed.
template <class T>
T ok(Result<T> result, std::source_location where = std::source_location::current()) {
  if (!result) throw_unexpected(result.error(), where);
  return std::move(*result);
}
void ok(Status status, std::source_location where = std::source_location::current());

// Whether `result` is an error with `code` and a message; says what it was otherwise.
template <class T>
::testing::AssertionResult is_error(const Result<T>& result, ErrorCode code, const char* what) {
  if (result.has_value()) return ::testing::AssertionFailure() << what << " succeeded";
  if (result.error().code != code) {
    return ::testing::AssertionFailure()
           << what << " failed with " << to_string(result.error().code) << " ("
           << result.error().message << "), expected " << to_string(code);
  }
  if (result.error().message.empty()) {
    return ::testing::AssertionFailure() << what << " gave no message";
  }
  return ::testing::AssertionSuccess();
}

// A job of `queue` with `payload` and the defaults of NewJob.
NewJob new_job(std::string queue, std::string payload = "payload");

// The ids of the jobs, in their order.
std::vector<JobId> ids_of(const std::vector<Job>& jobs);

// Every column, one line: equal strings mean equal rows.
std::string dump(const Job& job);
std::string dump(const QueueStats& stats);

// Polls `condition` every 10 ms until it holds or `patience` passes; returns whether it held.
bool eventually(const std::function<bool()>& condition,
                std::chrono::steady_clock::duration patience = kPatience);

class QueueTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;

  // Opens the test's database (creating its schema) with `options`; the handle stays open
  // for the rest of the test and is what q() returns.
  Queue& open(QueueOptions options = {});
  // The handle opened by open(), opening one with default options on first use.
  Queue& q();
  // A second, independent handle on the same database (its own connections).
  Queue open_another(QueueOptions options = {});

  // Enqueues one job and returns its id.
  JobId enqueue(const NewJob& job);
  JobId enqueue(std::string queue, std::string payload = "payload");
  Job get(JobId id);
  // Leases exactly one job of the queue; fails the test when there is none.
  Job lease_one(const std::string& queue, const std::string& worker = "worker-1",
                Duration lease = std::chrono::seconds(30));
  std::vector<Job> lease(const std::string& queue, int max_jobs,
                         const std::string& worker = "worker-1",
                         Duration lease = std::chrono::seconds(30));
  // Drives a new job of the queue to a finished state through the public API; other jobs
  // of the queue are left as they were.
  JobId succeeded_job(const std::string& queue);
  JobId dead_job(const std::string& queue);
  JobId cancelled_job(const std::string& queue);

  // Every job of every queue (paged through list) and the stats of every queue: equal
  // snapshots mean nothing in the database changed.
  std::string snapshot();
  std::vector<Job> all_jobs();

  const std::string& url() const { return url_; }

 private:
  std::string url_;
  std::optional<Queue> queue_;
};

}  // namespace test
}  // namespace readpast

// Expects `expr` (a Result) to be an error with `expected_code` (and a message); more
// context may be streamed in with <<.
#define EXPECT_ERROR_CODE(expr, expected_code) \
  EXPECT_TRUE(::readpast::test::is_error((expr), (expected_code), #expr))

// Expects a time within [lo - tolerance, hi + tolerance], where [lo, hi] brackets the
// instant the database should have read its clock (plus any interval it added).
#define EXPECT_TIME_WITHIN(actual, lo, hi)                                                \
  do {                                                                                    \
    const ::readpast::TimePoint rp_actual_ = (actual);                                    \
    EXPECT_GE(rp_actual_, (lo) - ::readpast::test::kClockTolerance)                       \
        << #actual << " = " << ::readpast::format_time(rp_actual_) << " is earlier than " \
        << ::readpast::format_time(lo);                                                   \
    EXPECT_LE(rp_actual_, (hi) + ::readpast::test::kClockTolerance)                       \
        << #actual << " = " << ::readpast::format_time(rp_actual_) << " is later than "   \
        << ::readpast::format_time(hi);                                                   \
  } while (false)
