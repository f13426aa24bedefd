// cli/signal_watcher.hpp — SIGTERM and SIGINT, received on a thread of their own.
//
// The constructor blocks both signals in the calling thread, so it must run before any
// other thread is started (threads inherit the mask, and a signal is then delivered to
// nobody but the watcher's signalfd). No signal handler ever runs: all the work happens
// on the watcher's ordinary thread. The mask is left in place at destruction: the
// process is about to exit, and unblocking would let a late signal kill it.
// Child processes are spawned with an empty mask (see worker/child_process.hpp).
//
// Thread-safety: constructed and destroyed by one thread; the callback runs on the
// watcher's thread.
#pragma once

#include <functional>
#include <thread>

#include "cli/cli_error.hpp"
#include "worker/unique_fd.hpp"

namespace readpast::cli {

class SignalWatcher {
 public:
  SignalWatcher();  // blocks the signals; check ok() before start()
  ~SignalWatcher();
  SignalWatcher(const SignalWatcher&) = delete;
  SignalWatcher& operator=(const SignalWatcher&) = delete;

  CliStatus status() const;
  // Calls on_signal(signal number) on the watcher's thread for every signal received.
  void start(std::function<void(int)> on_signal);
  // Ends the watcher's thread (signals stay blocked). Called by the destructor too.
  void stop();

 private:
  void loop();

  // Constant after start().
  worker::UniqueFd signal_fd_;
  worker::UniqueFd stop_fd_;  // an eventfd: written by the destructor to end the thread
  int setup_errno_ = 0;
  std::function<void(int)> on_signal_;
  std::thread thread_;
};

}  // namespace readpast::cli
