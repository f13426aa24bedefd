// bench/run_threads.hpp — the worker threads of a raw-SQL subject's work(): each runs the
// subject's loop with counts of its own, summed at the end.
#pragma once

#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "subject.hpp"

namespace readpast::bench {

// Runs setup.threads threads of body(thread index, counts) and sums their counts; the
// first exception of any thread is rethrown after all have stopped.
template <class Body>
WorkerCounts run_threads(const WorkerSetup& setup, Body&& body) {
  std::vector<WorkerCounts> counts(static_cast<std::size_t>(setup.threads));
  std::mutex mu;
  std::exception_ptr error;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < setup.threads; ++t) {
      threads.emplace_back([&, t] {
        try {
          body(t, counts[static_cast<std::size_t>(t)]);
        } catch (...) {
          std::lock_guard lock(mu);
          if (!error) error = std::current_exception();
        }
      });
    }
  }
  if (error) std::rethrow_exception(error);
  WorkerCounts total;
  for (const auto& c : counts) total += c;
  return total;
}

}  // namespace readpast::bench
