// worker/exec_handler.hpp — runs a job as `/bin/sh -c COMMAND` (readpast work --exec).
//
// The payload is the command's stdin, never part of its command line; the job's id, queue,
// attempt and lease token are in READPAST_JOB_ID, READPAST_QUEUE, READPAST_ATTEMPT and
// READPAST_LEASE_TOKEN. Its stdout goes to a sink as it comes; its stderr, with the
// known secrets replaced (ExecOptions::secrets), goes to another a line at a time, and its
// last bytes are kept for last_error. (Both sinks are the worker's own by default.) Exit 0
// succeeds; another exit status or death by a signal fails the job. When the context's
// stop token fires, the command's whole process group gets SIGTERM, then SIGKILL after
// kill_wait, and the call returns a failure carrying the tail of its stderr (the runtime,
// which asked it to stop, decides what is recorded). When the command exits, whatever it
// left running in its process group (background jobs) is killed: a job's processes do not
// outlive it.
// A command that exits without reading all of its stdin is fine: the rest is dropped, and
// no SIGPIPE reaches the host process whatever its disposition of that signal.
//
// Thread-safety: operator() is const and may run in many threads at once; the sinks must
// be safe to call from several threads.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/secret_scrubber.hpp"
#include "readpast/worker.hpp"

namespace readpast::worker {

using OutputSink = std::function<void(std::string_view)>;

struct ExecOptions {
  std::string command;  // REQUIRES: not empty
  // More "NAME=value" entries for the command's environment (e.g. READPAST_DB); they
  // replace inherited variables of the same name.
  std::vector<std::string> extra_env;
  // Between SIGTERM and SIGKILL when a command is stopped. Default: 3s.
  Duration kill_wait = std::chrono::seconds(3);
  // How much of stderr is kept for last_error. Default: 4 KiB.
  std::size_t stderr_tail_bytes = 4096;
  // Where the command's output goes. Default (empty): the worker's own stdout / stderr.
  // stderr_sink gets whole lines, each with its '\n' (a line longer than 4 KiB in pieces,
  // and the last one maybe without).
  OutputSink stdout_sink;
  OutputSink stderr_sink;
  // Taken out of stderr before it reaches stderr_sink or last_error (the database
  // password). Default: none.
  detail::SecretScrubber secrets;
};

class ExecHandler {
 public:
  // Captures the worker's environment (less READPAST_JOB_ID and friends) for commands.
  explicit ExecHandler(ExecOptions options);

  // A readpast::JobHandler.
  JobResult operator()(const Job& job, std::stop_token stop) const;

 private:
  std::vector<std::string> environment_for(const Job& job) const;

  // Constant after construction.
  ExecOptions options_;
  std::vector<std::string> base_env_;
};

}  // namespace readpast::worker
