// bench/children.hpp — benchmark workers in processes of their own (this program, run as
// `readpast_bench child-work ...`), so that several processes can drain one SQLite file,
// and so that a worker's memory is measured without the benchmark's own.
//
// Line protocol: the child writes "ready" once its subject is open, waits for "go" on its
// stdin, then writes "progress N" about five times a second and finally "done JSON" (its
// counts and memory). Its stderr is the parent's.
//
// Thread-safety: a ChildProcess is used by one thread.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "subject.hpp"

namespace readpast::bench {

class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& args);
  ~ChildProcess();  // kills the child if it is still running, and reaps it
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  void send(const std::string& line);
  int output_fd() const { return out_fd_; }
  // Reads what is available (call when output_fd() is readable); returns complete lines.
  std::vector<std::string> read_lines();
  bool eof() const { return eof_; }

 private:
  pid_t pid_ = -1;
  int in_fd_ = -1;
  int out_fd_ = -1;
  bool eof_ = false;
  std::string buffer_;
};

struct DrainShape {
  int processes = 1;
  int threads = 1;
  int batch = 1;
};

struct DrainResult {
  double seconds = 0;  // from "go" to the last completion seen in the database
  std::int64_t completed = 0;
  nlohmann::json children = nlohmann::json::array();  // each child's "done" record
};

// Runs shape.processes children of `child_args` (each: `child-work` + subject options +
// --threads/--batch) against a prefilled queue and times the drain: from "go" until every
// child is done and `subject` shows no unfinished job. `progress` receives completions.
DrainResult drain_with_children(const std::vector<std::string>& child_args, const DrainShape& shape,
                                Subject& subject, std::atomic<std::int64_t>& progress);

// The body of `readpast_bench child-work`: builds the subject, then speaks the protocol.
int child_work_main(Subject& subject, const WorkerSetup& setup);

}  // namespace readpast::bench
