// worker/handler.hpp — what the worker runtime asks of whatever runs a job: the `--exec`
// command runner today, C++ callables (a later readpast::Worker) tomorrow.
//
// Thread-safety: the runtime calls a Handler from several slot threads at once (one call
// per slot), so a Handler must be safe to call concurrently. A JobContext belongs to one
// call; its stop token may be triggered from another thread at any moment.
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <string>

#include "readpast/job.hpp"
#include "readpast/time.hpp"

namespace readpast::worker {

// What one call to a handler came to.
struct HandlerOutcome {
  enum class Kind {
    kSucceeded,  // the job did its work: complete it
    kFailed,     // the job failed by itself: record `error`, retry or bury it
    kAborted,    // the handler stopped because the context's stop token asked it to
  };
  Kind kind = Kind::kSucceeded;
  // kFailed: the reason (becomes last_error). kAborted: optional detail (e.g. the tail of
  // a killed command's stderr), appended to the runtime's own reason where one is recorded.
  std::string error;
  // kFailed: retry after this instead of the queue's backoff.
  std::optional<Duration> retry_after;

  static HandlerOutcome succeeded() { return {}; }
  static HandlerOutcome failed(std::string error,
                               std::optional<Duration> retry_after = std::nullopt) {
    return {Kind::kFailed, std::move(error), retry_after};
  }
  static HandlerOutcome aborted(std::string detail = {}) {
    return {Kind::kAborted, std::move(detail), std::nullopt};
  }
};

// One job as a handler sees it.
struct JobContext {
  const Job& job;  // leased: state running, attempts counts this attempt (from 1)
  // Requested when the job must stop now: it timed out, its lease was lost (cancelled or
  // taken over), or the worker is shutting down past its grace period. A handler that
  // stops because of it returns HandlerOutcome::aborted(); the runtime decides what is
  // recorded. Stop callbacks run on the thread that requests the stop: keep them tiny.
  std::stop_token stop;
};

// Runs one job. May throw: the runtime records the exception's message as the failure.
using Handler = std::function<HandlerOutcome(JobContext&)>;

}  // namespace readpast::worker
