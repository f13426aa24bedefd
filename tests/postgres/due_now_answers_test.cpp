// What an idle waiter takes from another's probe (src/engines/postgres/due_now_answers.hpp):
// the decision alone, without a database.
#include "engines/postgres/due_now_answers.hpp"

#include <gtest/gtest.h>

namespace readpast::test {
namespace {

using detail::pg::DueNowAnswers;
using namespace std::chrono_literals;

const auto probe_time = std::chrono::steady_clock::time_point(1000s);

TEST(DueNowAnswers, AnAnswerIsSharedForTwentyMillisecondsAndNoLonger) {
  DueNowAnswers answers;
  EXPECT_FALSE(answers.fresh("q", probe_time)) << "nothing probed yet";
  answers.seen("q", probe_time);
  EXPECT_TRUE(answers.fresh("q", probe_time));
  EXPECT_TRUE(answers.fresh("q", probe_time + DueNowAnswers::kShared - 1ms));
  EXPECT_FALSE(answers.fresh("q", probe_time + DueNowAnswers::kShared));
  EXPECT_FALSE(answers.fresh("q", probe_time + 1s));
  // A later probe's answer is shared from its own time.
  answers.seen("q", probe_time + 1s);
  EXPECT_TRUE(answers.fresh("q", probe_time + 1s + 10ms));
}

TEST(DueNowAnswers, EachQueueHasItsOwn) {
  DueNowAnswers answers;
  answers.seen("mail", probe_time);
  EXPECT_TRUE(answers.fresh("mail", probe_time + 5ms));
  EXPECT_FALSE(answers.fresh("sms", probe_time + 5ms));
}

TEST(DueNowAnswers, AnAnswerFromAClockAheadIsNotTaken) {
  // Threads read the clock at different moments: an answer recorded after `now` was read is
  // not fresh for it (it is no older than kShared, but the waiter cannot know how it fits).
  DueNowAnswers answers;
  answers.seen("q", probe_time + 5ms);
  EXPECT_FALSE(answers.fresh("q", probe_time));
}

}  // namespace
}  // namespace readpast::test
