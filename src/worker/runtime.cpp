#include "worker/runtime.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <utility>

#include "core/log.hpp"

namespace readpast::worker {
namespace {

// Calls retried while the database is unavailable: from 100ms up to 2s apart.
constexpr auto kRetryMin = std::chrono::milliseconds(100);
constexpr auto kRetryMax = std::chrono::seconds(2);
// A heartbeat that failed because the database is unavailable is tried again this soon.
constexpr auto kHeartbeatRetry = std::chrono::seconds(1);
// How much of a job's error goes into a log line (the command's stderr was shown already).
constexpr std::size_t kLoggedErrorBytes = 200;

std::string one_line(std::string_view text) {
  auto newline = text.find('\n');
  std::string line(text.substr(0, std::min(newline, kLoggedErrorBytes)));
  if (line.size() < text.size()) line += " ...";
  return line;
}

std::string seconds_text(std::chrono::steady_clock::duration d) {
  return format_duration(std::chrono::duration_cast<Duration>(d));
}

// Joins the threads it holds when it goes out of scope, after telling them to end.
class ThreadGroup {
 public:
  explicit ThreadGroup(std::function<void()> tell_to_end) : tell_to_end_(std::move(tell_to_end)) {}
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;
  ~ThreadGroup() { join(); }
  template <class F>
  void start(F&& f) {
    threads_.emplace_back(std::forward<F>(f));
  }
  void join() {
    if (threads_.empty()) return;
    tell_to_end_();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  std::function<void()> tell_to_end_;
  std::vector<std::thread> threads_;
};

}  // namespace

Runtime::Runtime(Queue& queue, RuntimeOptions options, Handler handler)
    : queue_(queue),
      options_(std::move(options)),
      handler_(std::move(handler)),
      outage_(options_.logger),
      slots_(static_cast<std::size_t>(std::max(1, options_.concurrency))) {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].number = static_cast<int>(i + 1);
    slots_[i].worker_id = options_.worker_id + "/slot" + std::to_string(i + 1);
  }
}

Runtime::~Runtime() = default;

void Runtime::log(LogLevel level, const std::string& message) const {
  detail::emit(options_.logger, level, message);
}

RuntimeCounters Runtime::counters() const {
  return RuntimeCounters{succeeded_.load(), failed_.load(), dead_.load(),
                         released_.load(),  lost_.load(),   running_.load()};
}

void Runtime::request_stop() {
  std::string message;
  {
    std::lock_guard lock(mu_);
    std::int64_t running = running_.load();
    if (stop_phase_ == StopPhase::kRunning) {
      stop_phase_ = StopPhase::kGraceful;
      grace_deadline_ = Clock::now() + options_.grace;
      message = running == 0 ? "stopping"
                             : "stopping: " + std::to_string(running) + " running job(s) have " +
                                   format_duration(options_.grace) +
                                   " to finish; signal again to stop them now";
    } else if (stop_phase_ == StopPhase::kGraceful) {
      stop_phase_ = StopPhase::kForced;
      grace_deadline_ = Clock::now();
      message = "stopping now: running jobs are stopped and released";
    } else {
      return;
    }
  }
  cv_.notify_all();
  log(LogLevel::kInfo, message);
}

void Runtime::fail_fatally(const Error& error) {
  {
    std::lock_guard lock(mu_);
    if (!fatal_error_) fatal_error_ = error;
    if (stop_phase_ == StopPhase::kRunning) {
      stop_phase_ = StopPhase::kGraceful;
      grace_deadline_ = Clock::now() + options_.grace;
    }
  }
  cv_.notify_all();
  log(LogLevel::kError, "stopping: " + error.message);
}

void Runtime::sleep_unless_stopping(Duration duration) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, duration, [&] { return stop_phase_ != StopPhase::kRunning; });
}

template <class Call>
auto Runtime::retry_unavailable(std::string_view what, Call&& call, const ActiveJob* active) {
  Duration delay = kRetryMin;
  for (;;) {
    auto result = call();
    if (result) {
      outage_.recovered();
      return result;
    }
    if (!result.error().is_unavailable()) return result;
    outage_.failed(what, result.error());
    // Past the lease, retrying is pointless: the job is anyone's again.
    Clock::time_point give_up;
    {
      std::lock_guard lock(mu_);
      give_up = active->lease_expires;
    }
    if (Clock::now() + delay >= give_up) {
      log(LogLevel::kError, "job " + std::to_string(active->job.id) + ": gave up " +
                                std::string(what) +
                                " while the database is unavailable; the job runs again once "
                                "its lease expires");
      return result;
    }
    std::this_thread::sleep_for(delay);
    delay = std::min<Duration>(delay * 2, kRetryMax);
  }
}

Status Runtime::run() {
  ThreadGroup threads([this] {
    {
      std::lock_guard lock(mu_);
      threads_exit_ = true;
    }
    cv_.notify_all();
  });
  for (auto& slot : slots_) threads.start([this, &slot] { slot_loop(slot); });
  threads.start([this] { heartbeat_loop(); });
  threads.start([this] { timer_loop(); });

  leasing_loop();

  // No more leasing. Wait for the slots to empty: jobs finish, or the timer thread stops
  // them when their grace runs out.
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] {
      return std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.active; });
    });
  }
  threads.join();
  std::lock_guard lock(mu_);
  if (fatal_error_) return fail_with(*fatal_error_);
  return {};
}

void Runtime::leasing_loop() {
  Duration idle_wait = options_.idle_wait_min;
  Duration retry_wait = kRetryMin;  // while the database is unavailable
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return stop_phase_ != StopPhase::kRunning ||
               std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.active; });
      });
      if (stop_phase_ != StopPhase::kRunning) return;
    }
    auto round = lease_for_free_slots();
    if (round.end) return;
    if (round.unavailable) {
      sleep_unless_stopping(retry_wait);
      retry_wait = std::min<Duration>(retry_wait * 2, kRetryMax);
      continue;
    }
    retry_wait = kRetryMin;
    if (round.leased > 0) {
      idle_wait = options_.idle_wait_min;
      continue;
    }
    if (options_.drain && drained()) {
      log(LogLevel::kInfo, "queue " + options_.queue + " drained");
      return;
    }
    auto woken = queue_.wait_for_work(options_.queue, idle_wait);
    if (woken) {
      outage_.recovered();
      if (!*woken) idle_wait = std::min(idle_wait * 2, options_.idle_wait_max);
    } else if (woken.error().is_unavailable()) {
      outage_.failed("waiting for jobs", woken.error());
      sleep_unless_stopping(retry_wait);
      retry_wait = std::min<Duration>(retry_wait * 2, kRetryMax);
    } else {
      fail_fatally(woken.error());
      return;
    }
  }
}

Runtime::LeaseRound Runtime::lease_for_free_slots() {
  std::vector<Slot*> free;
  {
    std::lock_guard lock(mu_);
    for (auto& slot : slots_) {
      if (!slot.active) free.push_back(&slot);
    }
  }
  LeaseRound round;
  for (Slot* slot : free) {
    const auto asked_at = Clock::now();
    auto jobs =
        queue_.lease(LeaseRequest{options_.queue, slot->worker_id, 1, options_.lease_duration});
    if (!jobs) {
      if (!jobs.error().is_unavailable()) {
        fail_fatally(jobs.error());
        round.end = true;
        return round;
      }
      outage_.failed("leasing", jobs.error());
      round.unavailable = true;
      return round;
    }
    outage_.recovered();
    if (jobs->empty()) return round;

    auto active = std::make_unique<ActiveJob>();
    active->job = std::move(jobs->front());
    active->started = Clock::now();
    active->lease_expires = asked_at + options_.lease_duration;
    if (options_.timeout) active->timeout_at = active->started + *options_.timeout;
    bool stopping;
    {
      std::lock_guard lock(mu_);
      stopping = stop_phase_ != StopPhase::kRunning;
      if (!stopping) {
        slot->active = std::move(active);
        running_.fetch_add(1);
      }
    }
    if (stopping) {
      // Leased just as the stop came: hand it straight back, no attempt spent.
      auto released = retry_unavailable(
          "releasing", [&] { return queue_.release(active->job.id, *active->job.lease_token); },
          active.get());
      if (released) released_.fetch_add(1);
      round.end = true;
      return round;
    }
    cv_.notify_all();
    ++round.leased;
  }
  return round;
}

bool Runtime::drained() {
  {
    std::lock_guard lock(mu_);
    if (std::any_of(slots_.begin(), slots_.end(),
                    [](const Slot& s) { return s.active != nullptr; })) {
      return false;
    }
  }
  auto stats = queue_.stats(options_.queue);
  if (!stats) {
    if (stats.error().is_unavailable()) {
      outage_.failed("reading stats", stats.error());
    } else {
      log(LogLevel::kWarn, "cannot read the queue's stats: " + stats.error().message);
    }
    return false;
  }
  outage_.recovered();
  return std::all_of(stats->begin(), stats->end(),
                     [](const QueueStats& s) { return s.available == 0 && s.running == 0; });
}

void Runtime::slot_loop(Slot& slot) {
  for (;;) {
    ActiveJob* active;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return slot.active || threads_exit_; });
      if (!slot.active) return;
      active = slot.active.get();
    }
    // The job's fields are constant while the slot holds it: read them without the lock.
    log(LogLevel::kDebug, "job " + std::to_string(active->job.id) + " started (attempt " +
                              std::to_string(active->job.attempts) + ", " + slot.worker_id + ")");
    HandlerOutcome outcome;
    JobContext context{active->job, active->stop.get_token()};
    try {
      outcome = handler_(context);
    } catch (const std::exception& e) {
      outcome = HandlerOutcome::failed(e.what());
    } catch (...) {
      outcome =
          HandlerOutcome::failed("the handler threw an exception that is not a std::exception");
    }
    Abort abort;
    {
      std::lock_guard lock(mu_);
      active->phase = JobPhase::kSettling;
      abort = active->abort;
    }
    settle(*active, outcome, abort);
    {
      std::lock_guard lock(mu_);
      slot.active.reset();
      running_.fetch_sub(1);
    }
    cv_.notify_all();
  }
}

std::string Runtime::slot_summary(const ActiveJob& active) const {
  return "job " + std::to_string(active.job.id) + " (attempt " +
         std::to_string(active.job.attempts) + "/" + std::to_string(active.job.max_attempts) + ")";
}

void Runtime::settle(const ActiveJob& active, const HandlerOutcome& outcome, Abort abort) {
  const Job& job = active.job;
  const LeaseToken& token = *job.lease_token;
  const std::string who = slot_summary(active);
  const std::string took = seconds_text(Clock::now() - active.started);

  if (abort == Abort::kLeaseLost) {
    lost_.fetch_add(1);
    log(LogLevel::kWarn,
        who + ": lease lost (cancelled, or taken over by another worker); " +
            (outcome.kind == HandlerOutcome::Kind::kAborted ? "stopped it, " : "") +
            "result discarded");
    return;
  }

  std::string error;
  std::optional<Duration> retry_after;
  switch (outcome.kind) {
    case HandlerOutcome::Kind::kSucceeded: {
      auto done = retry_unavailable(
          "completing a job", [&] { return queue_.complete(job.id, token); }, &active);
      if (done) {
        succeeded_.fetch_add(1);
        log(LogLevel::kDebug, who + " succeeded in " + took);
      } else if (done.error().is_lease_lost()) {
        lost_.fetch_add(1);
        log(LogLevel::kWarn, who +
                                 " finished, but its lease was lost (cancelled, or taken "
                                 "over by another worker); result discarded");
      } else if (!done.error().is_unavailable()) {
        log(LogLevel::kError, who + ": cannot record success: " + done.error().message);
      }
      return;
    }
    case HandlerOutcome::Kind::kFailed:
      error = outcome.error;
      retry_after = outcome.retry_after;
      break;
    case HandlerOutcome::Kind::kAborted:
      if (abort == Abort::kShutdown) {
        auto released = retry_unavailable(
            "releasing a job", [&] { return queue_.release(job.id, token); }, &active);
        if (released) {
          released_.fetch_add(1);
          log(LogLevel::kInfo, who + " stopped at shutdown after " + took + " and released");
        } else if (!released.error().is_unavailable()) {
          log(LogLevel::kWarn, who + ": cannot release: " + released.error().message);
        }
        return;
      }
      if (abort == Abort::kTimedOut) {
        error = "timed out after " + format_duration(*options_.timeout);
      } else {
        error = "the handler stopped without a result";
      }
      if (!outcome.error.empty()) error += ": " + outcome.error;
      break;
  }

  FailOptions fail_options;
  fail_options.retry_after = retry_after;
  fail_options.backoff = options_.backoff;
  auto failed = retry_unavailable(
      "recording a failure", [&] { return queue_.fail(job.id, token, error, fail_options); },
      &active);
  if (!failed) {
    if (failed.error().is_lease_lost()) {
      lost_.fetch_add(1);
      log(LogLevel::kWarn, who +
                               " failed, but its lease was lost (cancelled, or taken over by "
                               "another worker); result discarded");
    } else if (!failed.error().is_unavailable()) {
      log(LogLevel::kError, who + ": cannot record failure: " + failed.error().message);
    }
    return;
  }
  failed_.fetch_add(1);
  if (*failed == FailOutcome::kDead) {
    dead_.fetch_add(1);
    log(LogLevel::kError, who + " failed and is dead (no attempts left): " + one_line(error));
  } else {
    log(LogLevel::kWarn, who + " failed, will retry: " + one_line(error));
  }
}

void Runtime::heartbeat_loop() {
  const Duration interval =
      std::max<Duration>(options_.lease_duration / 3, std::chrono::milliseconds(50));
  auto next_extend = Clock::now() + interval;
  auto next_cleanup = Clock::now();  // once at start, then every cleanup_interval
  std::unique_lock lock(mu_);
  while (!threads_exit_) {
    auto wake_at = std::min(next_extend, next_cleanup);
    cv_.wait_until(lock, wake_at, [&] { return threads_exit_; });
    if (threads_exit_) return;
    auto now = Clock::now();

    if (now >= next_extend) {
      std::vector<LeasedRef> refs;
      for (const auto& slot : slots_) {
        if (slot.active) refs.push_back({slot.active->job.id, *slot.active->job.lease_token});
      }
      next_extend = now + interval;
      if (!refs.empty()) {
        lock.unlock();
        auto extended = queue_.extend_batch(refs, options_.lease_duration);
        std::vector<std::stop_source> to_stop;
        std::vector<JobId> lost_ids;
        lock.lock();
        if (!extended) {
          if (extended.error().is_unavailable()) {
            outage_.failed("extending leases", extended.error());
            next_extend = std::min(next_extend, Clock::now() + kHeartbeatRetry);
          } else {
            lock.unlock();
            log(LogLevel::kError, "cannot extend leases: " + extended.error().message);
            lock.lock();
          }
          continue;
        }
        outage_.recovered();
        for (std::size_t i = 0; i < refs.size() && i < extended->size(); ++i) {
          for (auto& slot : slots_) {
            ActiveJob* a = slot.active.get();
            if (a == nullptr || a->job.id != refs[i].id || *a->job.lease_token != refs[i].token) {
              continue;
            }
            if ((*extended)[i]) {
              a->lease_expires = now + options_.lease_duration;
            } else if (a->phase == JobPhase::kRunning && a->abort == Abort::kNone) {
              // Settling jobs are left alone: their own call reports what happened.
              a->abort = Abort::kLeaseLost;
              to_stop.push_back(a->stop);
              lost_ids.push_back(a->job.id);
            }
          }
        }
        if (!to_stop.empty()) {
          lock.unlock();
          for (auto& stop : to_stop) stop.request_stop();
          for (JobId id : lost_ids) {
            log(LogLevel::kDebug, "job " + std::to_string(id) +
                                      ": lease lost (cancelled, or taken over); stopping it");
          }
          lock.lock();
        }
      }
    }

    if (Clock::now() >= next_cleanup) {
      next_cleanup = Clock::now() + options_.cleanup_interval;
      lock.unlock();
      auto removed = queue_.apply_retention(options_.queue);
      if (!removed) {
        if (removed.error().is_unavailable()) {
          outage_.failed("removing expired jobs", removed.error());
        } else {
          log(LogLevel::kWarn, "cannot remove expired succeeded jobs: " + removed.error().message);
        }
      } else if (*removed > 0) {
        outage_.recovered();
        log(LogLevel::kDebug, "removed " + std::to_string(*removed) + " expired succeeded job(s)");
      }
      lock.lock();
    }
  }
}

void Runtime::timer_loop() {
  std::unique_lock lock(mu_);
  while (!threads_exit_) {
    const auto now = Clock::now();
    std::optional<Clock::time_point> next;
    auto consider = [&](Clock::time_point t) { next = next ? std::min(*next, t) : t; };
    std::vector<std::stop_source> to_stop;
    std::vector<std::string> messages;
    for (auto& slot : slots_) {
      ActiveJob* a = slot.active.get();
      if (a == nullptr || a->phase != JobPhase::kRunning || a->abort != Abort::kNone) continue;
      if (a->timeout_at && *a->timeout_at <= now) {
        a->abort = Abort::kTimedOut;
        to_stop.push_back(a->stop);
        messages.push_back(slot_summary(*a) + " timed out after " +
                           format_duration(*options_.timeout) + "; stopping it");
        continue;
      }
      if (stop_phase_ != StopPhase::kRunning && grace_deadline_ <= now) {
        a->abort = Abort::kShutdown;
        to_stop.push_back(a->stop);
        messages.push_back(slot_summary(*a) + ": grace period over; stopping it");
        continue;
      }
      if (a->timeout_at) consider(*a->timeout_at);
      if (stop_phase_ != StopPhase::kRunning) consider(grace_deadline_);
    }
    if (!to_stop.empty()) {
      lock.unlock();
      for (auto& stop : to_stop) stop.request_stop();
      for (const auto& m : messages) log(LogLevel::kInfo, m);
      lock.lock();
      continue;
    }
    // Woken by any change: a new job, a stop request, the end.
    if (next) {
      cv_.wait_until(lock, *next);
    } else {
      cv_.wait(lock);
    }
  }
}

}  // namespace readpast::worker
