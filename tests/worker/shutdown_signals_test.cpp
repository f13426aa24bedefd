// readpast::ShutdownSignals: SIGTERM and SIGINT reach the callback on an ordinary thread,
// also when they arrive before the program has set one.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "readpast/worker.hpp"

namespace readpast {
namespace {

using namespace std::chrono_literals;

// Runs in a process of its own (a death test re-executes the program for this test
// only), so that no other thread of the test program can take the signal.
[[noreturn]] void exit_with_signal_seen(bool callback_before_signal) {
  ShutdownSignals signals;
  std::atomic<int> seen{0};
  if (callback_before_signal) signals.on_signal([&seen](int s) { seen = s; });
  ::kill(::getpid(), SIGTERM);
  // Long enough for the watcher thread to have read the signal off its signalfd.
  std::this_thread::sleep_for(300ms);
  if (!callback_before_signal) signals.on_signal([&seen](int s) { seen = s; });
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (seen.load() == 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
  }
  std::_Exit(seen.load() == SIGTERM ? 0 : 1);
}

TEST(ShutdownSignalsTest, ASignalReachesTheCallback) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_with_signal_seen(true), testing::ExitedWithCode(0), "");
}

TEST(ShutdownSignalsTest, ASignalBeforeAnyCallbackIsKeptForTheFirstOne) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(exit_with_signal_seen(false), testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace readpast
