#include "worker/outage_log.hpp"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace readpast::worker {
namespace {

// The `event` field of every record the logger was sent.
class EventLog {
 public:
  Logger logger() {
    return [this](const LogRecord& record) {
      std::lock_guard lock(mu_);
      for (const auto& [key, value] : record.fields) {
        if (key == "event") events_.push_back(value);
      }
    };
  }
  std::vector<std::string> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

const Error kDown = Error::unavailable("connection refused");

TEST(OutageLogTest, SaysOnceThatTheDatabaseIsDownAndOnceThatItIsBack) {
  EventLog log;
  OutageLog outage(detail::LevelledLogger(log.logger(), LogLevel::kDebug));
  outage.recovered("lease");  // no outage yet: nothing to say
  outage.failed("lease", kDown);
  outage.failed("lease", kDown);
  outage.failed("complete", kDown);
  outage.recovered("complete");
  outage.recovered("lease");
  outage.failed("lease", kDown);
  EXPECT_EQ(log.events(), (std::vector<std::string>{"database_unavailable", "database_available",
                                                    "database_unavailable"}));
}

TEST(OutageLogTest, AnOutageOfWritesIsNotEndedByReadsThatStillWork) {
  // A full disk: leases fail while waiting for jobs and looking for schedules succeed.
  EventLog log;
  OutageLog outage(detail::LevelledLogger(log.logger(), LogLevel::kDebug));
  for (int second = 0; second < 30; ++second) {
    outage.failed("leasing", Error::unavailable("database or disk is full"));
    outage.recovered("waiting for jobs");
    outage.recovered("enqueuing scheduled jobs");
  }
  EXPECT_EQ(log.events(), std::vector<std::string>{"database_unavailable"});
  outage.recovered("leasing");  // space freed
  outage.recovered("leasing");
  EXPECT_EQ(log.events(), (std::vector<std::string>{"database_unavailable", "database_available"}));
}

TEST(OutageLogTest, EventsBelowTheLogLevelAreNotLogged) {
  EventLog log;
  OutageLog outage(detail::LevelledLogger(log.logger(), LogLevel::kWarn));
  outage.failed("lease", kDown);
  outage.recovered("lease");  // info: below kWarn (readpast work -q)
  EXPECT_EQ(log.events(), std::vector<std::string>{"database_unavailable"});

  EventLog errors_only;
  OutageLog quiet(detail::LevelledLogger(errors_only.logger(), LogLevel::kError));
  quiet.failed("lease", kDown);  // warn: below kError
  quiet.recovered("lease");
  EXPECT_TRUE(errors_only.events().empty());
}

}  // namespace
}  // namespace readpast::worker
