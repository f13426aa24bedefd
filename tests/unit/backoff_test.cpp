// Backoff::delay_after: exponential growth from base, the cap, the jitter range; validate.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>

#include "readpast/options.hpp"

namespace readpast {
namespace {

using namespace std::chrono_literals;

Backoff no_jitter(Duration base, Duration cap) {
  return Backoff{base, cap, 0.0};
}

TEST(Backoff, DoublesFromBaseWithEachFailedAttempt) {
  Backoff b = no_jitter(1s, 1h);
  EXPECT_EQ(b.delay_after(1, 0.0), Duration(1s));
  EXPECT_EQ(b.delay_after(2, 0.0), Duration(2s));
  EXPECT_EQ(b.delay_after(3, 0.0), Duration(4s));
  EXPECT_EQ(b.delay_after(4, 0.0), Duration(8s));
  EXPECT_EQ(b.delay_after(11, 0.0), Duration(1024s));
}

TEST(Backoff, StopsAtTheCap) {
  Backoff b = no_jitter(1s, 1min);
  EXPECT_EQ(b.delay_after(6, 0.0), Duration(32s));
  EXPECT_EQ(b.delay_after(7, 0.0), Duration(1min));
  EXPECT_EQ(b.delay_after(8, 0.0), Duration(1min));
}

TEST(Backoff, DoesNotOverflowForManyAttempts) {
  Backoff b = no_jitter(1s, 1h);
  for (int attempt : {30, 62, 63, 64, 65, 100, 1000, 1'000'000, std::numeric_limits<int>::max()}) {
    EXPECT_EQ(b.delay_after(attempt, 0.0), Duration(1h)) << "attempt " << attempt;
    EXPECT_EQ(b.delay_after(attempt, 0.999), Duration(1h)) << "attempt " << attempt;
  }
}

TEST(Backoff, WithoutJitterIgnoresTheRandomDraw) {
  Backoff b = no_jitter(500ms, 1h);
  for (double r : {0.0, 0.25, 0.5, 0.999999}) {
    EXPECT_EQ(b.delay_after(3, r), Duration(2s)) << "r = " << r;
  }
}

TEST(Backoff, JitterScalesIntoTheDocumentedRange) {
  // delay(n) = min(cap, base * 2^(n-1)) scaled by a factor in [1 - jitter, 1].
  Backoff b{10s, 1h, 0.2};
  const Duration full = 40s;  // attempt 3
  Duration lowest = full;
  Duration highest = Duration::zero();
  for (int i = 0; i < 1000; ++i) {
    double r = i / 1000.0;
    Duration d = b.delay_after(3, r);
    EXPECT_GE(d, Duration(32s)) << "r = " << r;
    EXPECT_LE(d, full) << "r = " << r;
    lowest = std::min(lowest, d);
    highest = std::max(highest, d);
  }
  // The draw must actually spread the delays over most of the range.
  EXPECT_LT(lowest, Duration(33s));
  EXPECT_GT(highest, Duration(39s));
}

TEST(Backoff, FullJitterReachesDownToNearZero) {
  Backoff b{10s, 1h, 1.0};
  Duration lowest = Duration::max();
  for (int i = 0; i < 100; ++i) {
    Duration d = b.delay_after(1, i / 100.0);
    EXPECT_GE(d, Duration::zero());
    EXPECT_LE(d, Duration(10s));
    lowest = std::min(lowest, d);
  }
  EXPECT_LT(lowest, Duration(1s));
}

TEST(Backoff, JitterAppliesToTheCappedDelay) {
  Backoff b{1s, 10s, 0.5};
  for (double r : {0.0, 0.5, 0.99}) {
    Duration d = b.delay_after(50, r);
    EXPECT_GE(d, Duration(5s));
    EXPECT_LE(d, Duration(10s));
  }
}

TEST(Backoff, DefaultsAreValid) {
  Backoff b;
  EXPECT_EQ(b.base, Duration(1s));
  EXPECT_EQ(b.cap, Duration(1h));
  EXPECT_DOUBLE_EQ(b.jitter, 0.2);
  EXPECT_TRUE(b.validate().has_value());
}

TEST(Backoff, ValidateAcceptsTheEdgesOfJitter) {
  EXPECT_TRUE((Backoff{1s, 1h, 0.0}).validate().has_value());
  EXPECT_TRUE((Backoff{1s, 1h, 1.0}).validate().has_value());
}

TEST(Backoff, ValidateRejectsNonsense) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  struct Case {
    const char* what;
    Backoff backoff;
  };
  for (const Case& c :
       {Case{"negative base", Backoff{-1s, 1h, 0.2}}, Case{"negative cap", Backoff{1s, -1s, 0.2}},
        Case{"negative jitter", Backoff{1s, 1h, -0.1}},
        Case{"jitter above 1", Backoff{1s, 1h, 1.5}}, Case{"NaN jitter", Backoff{1s, 1h, nan}},
        Case{"infinite jitter", Backoff{1s, 1h, inf}}}) {
    auto status = c.backoff.validate();
    EXPECT_FALSE(status.has_value()) << c.what << " was accepted";
    if (!status) {
      EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument) << c.what;
      EXPECT_FALSE(status.error().message.empty()) << c.what;
    }
  }
}

}  // namespace
}  // namespace readpast
