// mp_worker: one worker process of the multi-process and fault tests.
//
//   mp_worker --url URL --queue Q --name P --history FILE
//             [--threads T] [--batch N] [--lease-ms MS] [--exec-us US]
//             [--complete batch|single|mixed] [--ops plain|all]
//
// Runs T threads that lease up to N jobs at a time (lease of MS), "execute" each (sleep US
// microseconds), and complete them: all in one complete_batch call, one complete call each,
// or (mixed, the default) the one or the other on alternate threads. With --ops all, some
// jobs take the other fenced calls too: a job whose id is 1 mod 5 fails its first attempt
// (fail with retry_after 0, so it runs again at once), and one whose id is 2 mod 5 is
// extended before it is completed. Every lease, execution (start and end), settling call
// and its answer goes to FILE as it happens (see support/history.hpp). Exits 0 once the
// queue holds no available and no running job, 1 on an unexpected error, 2 on a bad
// command line.
//
// Like a careful worker, it does not start a job whose lease it knows has run out by its
// own monotonic clock (it was stopped, or a call before took too long): it releases the
// job instead (which fencing refuses, since the lease is gone) and moves on.
//
// Outages: a call answered kUnavailable (database busy, restarting, unreachable) is retried
// every 10-20 ms for up to 30 s of consecutive failures, then the process gives up (exit 1);
// so is opening the queue (every 50 ms).
// A lease call that failed so may have committed: its jobs come back when that lease
// expires. A settling call that failed so is re-sent with the same token; if the re-send is
// refused as lease lost, the first send may have committed, and the history records the
// outcome as unknown.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "readpast/readpast.hpp"
#include "support/history.hpp"

namespace readpast::test {
namespace {

struct Config {
  std::string url;
  std::string queue;
  std::string name;
  std::string history;
  int threads = 4;
  int batch = 16;
  Duration lease = std::chrono::seconds(30);
  Duration exec = Duration::zero();
  std::string complete = "mixed";
  bool all_ops = false;  // --ops all: some jobs fail once, some are extended
};

bool parse(int argc, char** argv, Config& config) {
  std::map<std::string, std::string> args;
  for (int i = 1; i + 1 < argc; i += 2) args[argv[i]] = argv[i + 1];
  if (argc % 2 != 1) return false;
  auto take = [&](const char* key, std::string& out) {
    auto it = args.find(key);
    if (it == args.end()) return false;
    out = it->second;
    args.erase(it);
    return true;
  };
  if (!take("--url", config.url) || !take("--queue", config.queue) ||
      !take("--name", config.name) || !take("--history", config.history)) {
    return false;
  }
  std::string value;
  if (take("--threads", value)) config.threads = std::stoi(value);
  if (take("--batch", value)) config.batch = std::stoi(value);
  if (take("--lease-ms", value)) config.lease = std::chrono::milliseconds(std::stoll(value));
  if (take("--exec-us", value)) config.exec = std::chrono::microseconds(std::stoll(value));
  take("--complete", config.complete);
  std::string ops = "plain";
  take("--ops", ops);
  config.all_ops = ops == "all";
  const bool known_mode =
      config.complete == "batch" || config.complete == "single" || config.complete == "mixed";
  return args.empty() && config.threads > 0 && config.batch > 0 && known_mode &&
         (ops == "plain" || ops == "all");
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "mp_worker: %s\n", why.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

struct Counters {
  std::atomic<std::int64_t> leased{0};
  std::atomic<std::int64_t> completed{0};
  std::atomic<std::int64_t> rejected{0};
  std::atomic<std::int64_t> unknown{0};   // completions of unknown outcome
  std::atomic<std::int64_t> failed{0};    // fail calls accepted
  std::atomic<std::int64_t> extended{0};  // extend calls accepted
  std::atomic<std::int64_t> skipped{0};   // jobs not run: their lease ran out first
  std::atomic<std::int64_t> busy{0};      // calls answered kUnavailable (and retried)
};

// How long a run of consecutive kUnavailable answers is waited out before giving up.
constexpr auto kOutagePatience = std::chrono::seconds(30);

// Consecutive kUnavailable answers of one thread's calls: each failure sleeps 10-20 ms (so
// a retry loop never spins, e.g. while the connection pool fails at once between reconnect
// attempts), and the outage is given up once it has lasted kOutagePatience.
class Outage {
 public:
  explicit Outage(Counters& counters) : counters_(counters), random_(std::random_device{}()) {}
  // After a kUnavailable answer: false once the outage has lasted too long, else sleeps.
  bool wait_out() {
    ++counters_.busy;
    const auto now = std::chrono::steady_clock::now();
    if (!since_) since_ = now;
    if (now - *since_ > kOutagePatience) return false;
    std::uniform_int_distribution<int> ms(10, 20);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms(random_)));
    return true;
  }
  // After any other answer.
  void over() { since_.reset(); }

 private:
  Counters& counters_;
  std::mt19937 random_;
  std::optional<std::chrono::steady_clock::time_point> since_;
};

// Calls `call` until it answers anything but kUnavailable or the outage lasts too long;
// *unavailable_seen tells whether any answer was kUnavailable.
template <class F>
auto retry_unavailable(Outage& outage, F&& call, bool* unavailable_seen = nullptr) {
  while (true) {
    auto result = call();
    if (result || !result.error().is_unavailable()) {
      outage.over();
      return result;
    }
    if (unavailable_seen) *unavailable_seen = true;
    if (!outage.wait_out()) return result;
  }
}

enum class Outcome { kAccepted, kRejected, kUnknown };

void record_completion(const Config& config, const std::string& worker, const LeasedRef& ref,
                       Outcome outcome, TimePoint t_start, TimePoint t_end, HistoryWriter& history,
                       Counters& counters) {
  CompleteEvent event;
  event.job = ref.id;
  event.token = ref.token.hex();
  event.process = config.name;
  event.worker = worker;
  event.accepted = outcome == Outcome::kAccepted;
  event.unknown = outcome == Outcome::kUnknown;
  if (outcome == Outcome::kRejected) event.error = "lease_lost";
  if (outcome == Outcome::kUnknown) {
    event.error = "unknown: the reply was lost (unavailable) and the re-send found the lease lost";
  }
  event.t_start = t_start;
  event.t = t_end;
  history.record(event);
  ++(outcome == Outcome::kAccepted   ? counters.completed
     : outcome == Outcome::kRejected ? counters.rejected
                                     : counters.unknown);
}

void record_settle(const Config& config, const std::string& worker, const LeasedRef& ref,
                   SettleEvent::Kind kind, Outcome outcome, TimePoint t_start, TimePoint t_end,
                   HistoryWriter& history, const std::string& fail_outcome = "") {
  SettleEvent event;
  event.kind = kind;
  event.job = ref.id;
  event.token = ref.token.hex();
  event.process = config.name;
  event.worker = worker;
  event.accepted = outcome == Outcome::kAccepted;
  event.unknown = outcome == Outcome::kUnknown;
  if (outcome == Outcome::kRejected) event.error = "lease_lost";
  if (outcome == Outcome::kUnknown) {
    event.error = "unknown: the reply was lost (unavailable) and the re-send found the lease lost";
  }
  if (kind == SettleEvent::Kind::kExtend) event.lease_duration = config.lease;
  if (outcome == Outcome::kAccepted) event.outcome = fail_outcome;
  event.t_start = t_start;
  event.t = t_end;
  history.record(event);
}

void record_exec(const Config& config, const std::string& worker, const Job& job,
                 ExecEvent::Phase phase, const std::string& result, HistoryWriter& history) {
  ExecEvent event;
  event.phase = phase;
  event.job = job.id;
  event.token = job.lease_token ? job.lease_token->hex() : "";
  event.process = config.name;
  event.worker = worker;
  event.attempt = job.attempts;
  event.pid = static_cast<long>(::getpid());
  event.result = result;
  event.t = wall_now();
  history.record(event);
}

void work(const Config& config, int thread, Queue& queue, HistoryWriter& history,
          Counters& counters) {
  const std::string worker = config.name + "/t" + std::to_string(thread);
  Outage outage(counters);
  auto give_up_unless = [&](bool patient, const char* what, const Error& error) {
    if (!patient) die(worker + ": " + what + ": unavailable for over 30 s: " + error.message);
  };
  while (true) {
    LeaseRequest request{config.queue, worker, config.batch, config.lease};
    const auto steady_start = std::chrono::steady_clock::now();
    TimePoint t_start = wall_now();
    auto leased = queue.lease(request);
    TimePoint t_end = wall_now();
    if (!leased) {
      // Unavailable: the lease may have committed all the same; if so, its jobs come back
      // once that (invisible) lease expires.
      if (leased.error().is_unavailable()) {
        give_up_unless(outage.wait_out(), "lease", leased.error());
        continue;
      }
      die(worker + ": lease: " + leased.error().message);
    }
    outage.over();
    if (leased->empty()) {
      auto stats = retry_unavailable(outage, [&] { return queue.stats(config.queue); });
      if (!stats) die(worker + ": stats: " + stats.error().message);
      std::int64_t pending = 0;
      for (const auto& s : *stats) pending += s.available + s.running + s.waiting;
      if (pending == 0) return;
      // Jobs remain (scheduled, or leased by others and maybe coming back on expiry).
      auto woken = queue.wait_for_work(config.queue, std::chrono::milliseconds(100));
      if (!woken) {
        if (!woken.error().is_unavailable()) {
          die(worker + ": wait_for_work: " + woken.error().message);
        }
        give_up_unless(outage.wait_out(), "wait_for_work", woken.error());
      }
      continue;
    }
    std::vector<LeasedRef> refs;
    for (const auto& job : *leased) {
      LeaseEvent event;
      event.job = job.id;
      event.token = job.lease_token ? job.lease_token->hex() : "";
      event.process = config.name;
      event.worker = worker;
      event.attempt = job.attempts;
      event.t_lease_start = t_start;
      event.t_lease_end = t_end;
      event.lease_expires_at = job.lease_expires_at.value_or(TimePoint{});
      history.record(event);
    }
    counters.leased += static_cast<std::int64_t>(leased->size());
    // Fenced calls other than complete, re-sent while unavailable; recorded with their
    // outcome (and, for an accepted fail, where the job went: *fail_outcome).
    auto settle = [&](SettleEvent::Kind kind, const LeasedRef& ref, auto&& call,
                      const std::string* fail_outcome = nullptr) {
      TimePoint s_start = wall_now();
      bool resent = false;
      auto status = retry_unavailable(outage, call, &resent);
      TimePoint s_end = wall_now();
      if (!status && !status.error().is_lease_lost()) {
        die(worker + ": " + std::string(to_string(kind)) + ": " + status.error().message);
      }
      const Outcome outcome = status   ? Outcome::kAccepted
                              : resent ? Outcome::kUnknown
                                       : Outcome::kRejected;
      record_settle(config, worker, ref, kind, outcome, s_start, s_end, history,
                    fail_outcome ? *fail_outcome : std::string());
      return outcome;
    };
    // "Execute" each job whose lease has not run out by this process's own clock; the
    // others are released (a call fencing must refuse).
    const auto lease_deadline = steady_start + config.lease - std::chrono::milliseconds(100);
    for (const auto& job : *leased) {
      const LeasedRef ref{job.id, job.lease_token.value_or(LeaseToken{})};
      if (std::chrono::steady_clock::now() > lease_deadline) {
        ++counters.skipped;
        settle(SettleEvent::Kind::kRelease, ref, [&] { return queue.release(ref.id, ref.token); });
        continue;
      }
      const bool fail_once = config.all_ops && job.id % 5 == 1 && job.attempts == 1;
      record_exec(config, worker, job, ExecEvent::Phase::kStart, "", history);
      if (config.exec > Duration::zero()) std::this_thread::sleep_for(config.exec);
      record_exec(config, worker, job, ExecEvent::Phase::kEnd, fail_once ? "exit 1" : "ok",
                  history);
      if (fail_once) {
        FailOptions retry_now;
        retry_now.retry_after = Duration::zero();
        std::string where;
        auto fail = [&]() -> Status {
          auto failed = queue.fail(ref.id, ref.token, "planned failure", retry_now);
          if (!failed) return fail_with(failed.error());
          where = *failed == FailOutcome::kDead ? "dead" : "retrying";
          return {};
        };
        if (settle(SettleEvent::Kind::kFail, ref, fail, &where) == Outcome::kAccepted) {
          ++counters.failed;
        }
        continue;
      }
      if (config.all_ops && job.id % 5 == 2) {
        auto extend = [&] { return queue.extend(ref.id, ref.token, config.lease); };
        if (settle(SettleEvent::Kind::kExtend, ref, extend) == Outcome::kAccepted) {
          ++counters.extended;
        }
      }
      refs.push_back(ref);
    }
    if (refs.empty()) continue;
    const bool single =
        config.complete == "single" || (config.complete == "mixed" && thread % 2 == 1);
    if (single) {
      for (const auto& ref : refs) {
        TimePoint c_start = wall_now();
        bool resent = false;  // a send was answered kUnavailable: it may have committed
        auto status = retry_unavailable(
            outage, [&] { return queue.complete(ref.id, ref.token); }, &resent);
        TimePoint c_end = wall_now();
        if (!status && !status.error().is_lease_lost()) {
          die(worker + ": complete: " + status.error().message);
        }
        const Outcome outcome = status   ? Outcome::kAccepted
                                : resent ? Outcome::kUnknown
                                         : Outcome::kRejected;
        record_completion(config, worker, ref, outcome, c_start, c_end, history, counters);
      }
    } else {
      TimePoint c_start = wall_now();
      bool resent = false;
      auto held = retry_unavailable(
          outage, [&] { return queue.complete_batch(refs); }, &resent);
      TimePoint c_end = wall_now();
      if (!held) die(worker + ": complete_batch: " + held.error().message);
      if (held->size() != refs.size()) die(worker + ": complete_batch answered the wrong count");
      for (std::size_t i = 0; i < refs.size(); ++i) {
        const Outcome outcome = (*held)[i] ? Outcome::kAccepted
                                : resent   ? Outcome::kUnknown
                                           : Outcome::kRejected;
        record_completion(config, worker, refs[i], outcome, c_start, c_end, history, counters);
      }
    }
  }
}

int run(int argc, char** argv) {
  Config config;
  if (!parse(argc, argv, config)) {
    std::fprintf(stderr,
                 "usage: mp_worker --url URL --queue Q --name P --history FILE [--threads T] "
                 "[--batch N] [--lease-ms MS] [--exec-us US] [--complete batch|single|mixed] "
                 "[--ops plain|all]\n");
    return 2;
  }
  HistoryWriter history(config.history);
  // Opening waits out an outage too (a network fault may strike as the process starts).
  auto opened = Queue::open(config.url);
  const auto open_deadline = std::chrono::steady_clock::now() + kOutagePatience;
  while (!opened && opened.error().is_unavailable() &&
         std::chrono::steady_clock::now() < open_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    opened = Queue::open(config.url);
  }
  if (!opened) die("open: " + opened.error().message);
  Queue& queue = *opened;
  Counters counters;
  std::vector<std::thread> threads;
  for (int t = 0; t < config.threads; ++t) {
    threads.emplace_back([&, t] { work(config, t, queue, history, counters); });
  }
  for (auto& thread : threads) thread.join();
  std::fprintf(stderr,
               "mp_worker %s: leased %lld, completed %lld, lease lost on %lld, outcome unknown "
               "of %lld, failed %lld, extended %lld, not run (lease ran out) %lld, "
               "unavailable %lld\n",
               config.name.c_str(), static_cast<long long>(counters.leased.load()),
               static_cast<long long>(counters.completed.load()),
               static_cast<long long>(counters.rejected.load()),
               static_cast<long long>(counters.unknown.load()),
               static_cast<long long>(counters.failed.load()),
               static_cast<long long>(counters.extended.load()),
               static_cast<long long>(counters.skipped.load()),
               static_cast<long long>(counters.busy.load()));
  return 0;
}

}  // namespace
}  // namespace readpast::test

int main(int argc, char** argv) {
  try {
    return readpast::test::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mp_worker: %s\n", e.what());
    return 1;
  }
}
